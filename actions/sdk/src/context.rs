//! The activation context: the `__OW_*` environment variables the executor sets per activation.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Who and what is running, as OpenWhisk describes an activation.
///
/// Strings are empty when the variable is absent (for example when a native binary is run by
/// hand).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// `__OW_NAMESPACE`: the namespace the action runs in.
    pub namespace: String,
    /// `__OW_ACTION_NAME`: the fully qualified action name, e.g. `/guest/hello`.
    pub action_name: String,
    /// `__OW_ACTION_VERSION`: the action's semantic version.
    pub action_version: String,
    /// `__OW_ACTIVATION_ID`: this activation's id.
    pub activation_id: String,
    /// `__OW_TRANSACTION_ID`: the transaction id of the request.
    pub transaction_id: String,
    /// `__OW_DEADLINE`: epoch milliseconds by which the activation must finish.
    pub deadline: Option<u64>,
    /// `__OW_API_KEY`: only present when the action is annotated `provide-api-key`.
    pub api_key: Option<String>,
    /// `__OW_API_HOST`: the OpenWhisk API host.
    pub api_host: String,
}

impl Context {
    /// Reads the context from the environment.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the context through `lookup` (a variable name to its value).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let string = |name: &str| lookup(name).unwrap_or_default();
        Context {
            namespace: string("__OW_NAMESPACE"),
            action_name: string("__OW_ACTION_NAME"),
            action_version: string("__OW_ACTION_VERSION"),
            activation_id: string("__OW_ACTIVATION_ID"),
            transaction_id: string("__OW_TRANSACTION_ID"),
            deadline: lookup("__OW_DEADLINE").and_then(|d| d.trim().parse().ok()),
            api_key: lookup("__OW_API_KEY").filter(|k| !k.is_empty()),
            api_host: string("__OW_API_HOST"),
        }
    }

    /// Time left until the deadline (zero once passed), or `None` without a deadline.
    pub fn remaining(&self) -> Option<Duration> {
        let deadline = self.deadline?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or(0);
        let left = u128::from(deadline).saturating_sub(now);
        Some(Duration::from_millis(
            u64::try_from(left).unwrap_or(u64::MAX),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_variables() {
        let ctx = Context::from_lookup(|name| match name {
            "__OW_NAMESPACE" => Some("guest".into()),
            "__OW_DEADLINE" => Some("1700000060000".into()),
            "__OW_API_KEY" => Some(String::new()),
            _ => None,
        });
        assert_eq!(ctx.namespace, "guest");
        assert_eq!(ctx.deadline, Some(1_700_000_060_000));
        assert_eq!(ctx.api_key, None);
        assert_eq!(ctx.action_name, "");
        assert_eq!(ctx.remaining(), Some(Duration::ZERO));
    }
}
