// The thesis's prime sieve (actions/prime's algorithm) in AssemblyScript, as a WASI command
// under the executor's action contract: the parameters as JSON in argv[1], the result as the
// last line of stdout. {"limit": N} (default 1,000,000) → {"limit", "count", "largest"}.

const DEFAULT_LIMIT: i64 = 1_000_000;
const MAX_LIMIT: i64 = 400_000_000;

// The number after `"limit":` in the parameters, or the default; -1 when it is not one.
function limitOf(params: string): i64 {
  const key = params.indexOf('"limit"');
  if (key < 0) return DEFAULT_LIMIT;
  let i = params.indexOf(":", key) + 1;
  while (i < params.length && params.charCodeAt(i) == 32) i++;
  let value: i64 = 0;
  let digits = 0;
  while (i < params.length) {
    const c = params.charCodeAt(i);
    if (c < 48 || c > 57) break;
    value = value * 10 + (c - 48);
    if (value > MAX_LIMIT) return -1;
    digits++;
    i++;
  }
  return digits > 0 ? value : -1;
}

// The module's top level is its `_start` (wasi-shim's exportStart).
function main(): void {
  const args = process.argv;
  const limit = limitOf(args.length > 1 ? args[1] : "{}");
  if (limit < 0) {
    console.log('{"error":"limit must be a whole number of at most 400000000"}');
    return;
  }
  const n = <i32>limit;
  const composite = new Uint8Array(n + 1);
  for (let i = 2; i * i <= n; i++) {
    if (composite[i] == 0) {
      for (let j = i * i; j <= n; j += i) composite[j] = 1;
    }
  }
  let count = 0;
  let largest = -1;
  for (let i = 2; i <= n; i++) {
    if (composite[i] == 0) {
      count++;
      largest = i;
    }
  }
  const last = largest < 0 ? "null" : largest.toString();
  console.log(`{"limit":${n},"count":${count},"largest":${last}}`);
}

main();
