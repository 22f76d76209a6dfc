// The thesis's prime sieve (actions/prime's algorithm) as an OpenWhisk nodejs action:
// {"limit": N} (default 1,000,000) → {"limit", "count", "largest"}.
function main(params) {
    const limit = params.limit === undefined ? 1000000 : params.limit;
    if (!Number.isInteger(limit) || limit < 0 || limit > 400000000) {
        return { error: 'limit must be a whole number of at most 400000000' };
    }
    const composite = new Uint8Array(limit + 1);
    for (let i = 2; i * i <= limit; i++) {
        if (composite[i] === 0) {
            for (let j = i * i; j <= limit; j += i) composite[j] = 1;
        }
    }
    let count = 0;
    let largest = null;
    for (let i = 2; i <= limit; i++) {
        if (composite[i] === 0) {
            count++;
            largest = i;
        }
    }
    return { limit, count, largest };
}
