//! `echo`: returns its parameters unchanged, first printing `__log` lines on stdout and `__err`
//! lines on stderr (the conformance suite uses this to test log capture).

use openwhisk::{Error, Value, params};

fn echo(p: Value) -> Result<Value, Error> {
    for line in params::strings(&p, "__log")? {
        println!("{line}");
    }
    for line in params::strings(&p, "__err")? {
        eprintln!("{line}");
    }
    Ok(p)
}

openwhisk::main!(echo);
