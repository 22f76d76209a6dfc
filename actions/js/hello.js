// A JavaScript action as OpenWhisk's nodejs runtime takes it: `main` gets the parameters and
// returns an object (or a Promise of one). Its top level runs once, at /init, into the
// action's snapshot; every activation starts from there.
const greetings = { en: 'Hello', de: 'Hallo', fr: 'Bonjour' };

function main(params) {
    const name = params.name || 'stranger';
    const greeting = greetings[params.lang] || greetings.en;
    console.log(`greeting ${name} in ${params.lang || 'en'}`);
    return new Promise((resolve) =>
        setTimeout(() => resolve({ greeting: `${greeting}, ${name}!`,
                                   activation: process.env.__OW_ACTIVATION_ID }), 10));
}
