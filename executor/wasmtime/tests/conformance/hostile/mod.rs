//! Hostile tenants and hostile neighbours: action code written to escape or exhaust the
//! executor, local processes and web pages that talk to its API. Every test ends by checking
//! what an operator relies on: the executor still answers, and nothing leaked out of the
//! sandbox or past a limit.

mod api;
mod connections;
mod grants;
mod host_calls;
mod inputs;
mod quotas;
mod resources;
mod signals;
mod time;
