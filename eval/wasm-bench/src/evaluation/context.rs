//! What every experiment needs besides its platform: the sizes, the epoch its samples' times
//! count from, and the delay server the I/O-bound actions call.

use std::time::Instant;

use serde_json::json;

use super::Sizes;
use crate::platform::{Action, Platform};

pub struct Context {
    pub sizes: Sizes,
    pub epoch: Instant,
    /// Port of the delay server (on loopback and on the Docker bridge's gateway).
    pub delay_port: u16,
}

impl Context {
    /// An action named `name` running `module`, with the parameters bound for `platform`.
    pub fn action(&self, platform: &dyn Platform, name: &str, module: &str) -> Action {
        let bound = match module {
            "net" => {
                json!({"url": format!("http://{}:{}/", platform.host_address(), self.delay_port)})
            }
            _ => json!({}),
        };
        Action::new(name, module, bound)
    }
}
