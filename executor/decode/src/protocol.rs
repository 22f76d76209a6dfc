//! OpenWhisk's /init and /run bodies as the invoker (and the WasmContainerFactory) send them.
//! Fields the executor does not use (`limits.concurrency`, …) are accepted and ignored: every
//! run is isolated whatever the concurrency.

use std::{borrow::Cow, collections::BTreeMap, fmt};

use serde::{
    Deserialize, Deserializer,
    de::{self, MapAccess, Visitor},
};
use serde_json::{Value, value::RawValue};

/// An /init body, borrowing the action's code from the request where it can (base64 has
/// nothing a JSON string would escape).
#[derive(Debug, Deserialize)]
pub struct InitRequest<'a> {
    #[serde(borrow)]
    pub value: Option<InitValue<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct InitValue<'a> {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub main: Option<String>,
    /// The action's OpenWhisk kind, as the patch sends it: `nodejs:*` runs the code on the
    /// JavaScript engine; none (or `wasm:*`) means the code is a WebAssembly module.
    #[serde(default)]
    pub kind: Option<String>,
    /// Borrowed from the body unless JSON escapes had to be undone.
    #[serde(default, borrow, deserialize_with = "borrowed_text")]
    pub code: Option<Cow<'a, str>>,
    /// OpenWhisk's controller sets it true exactly when `code` is base64; false means text.
    #[serde(default)]
    pub binary: Option<bool>,
    /// All values are strings in OpenWhisk; other JSON values are passed as their JSON text.
    #[serde(default)]
    pub env: Option<BTreeMap<String, Value>>,
    /// The root namespace of the action, as the invoker knows it (the patch sends it; no
    /// action parameter can set it): every grant of the container belongs to it.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The action's annotations; the executor acts on those of its capabilities
    /// (`capability` in the library) and ignores the others.
    #[serde(default)]
    pub annotations: BTreeMap<String, Value>,
    #[serde(default)]
    pub limits: Limits,
}

/// The action's limits as the WasmContainerFactory passes them.
#[derive(Debug, Default, Deserialize)]
pub struct Limits {
    /// MB of linear memory.
    pub memory: Option<u64>,
    /// Milliseconds per activation.
    pub timeout: Option<u64>,
    /// MB of logs per activation.
    pub logs: Option<u64>,
}

#[derive(Debug)]
pub struct RunRequest {
    /// The parameters' JSON text as sent (`null` when absent), never parsed into a tree.
    pub value: Box<RawValue>,
    /// Every other field (namespace, action_name, activation_id, deadline, api_key, …).
    pub context: BTreeMap<String, Value>,
}

/// `value` and every other field in one pass, without buffering the body as
/// `#[serde(flatten)]` would.
impl<'de> Deserialize<'de> for RunRequest {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = RunRequest;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object with the activation's `value` and its context")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RunRequest, A::Error> {
                let mut value = None;
                let mut context = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key != "value" {
                        context.insert(key, map.next_value()?);
                    } else if value.is_some() {
                        return Err(de::Error::duplicate_field("value"));
                    } else {
                        value = Some(map.next_value::<Box<RawValue>>()?);
                    }
                }
                let value = match value {
                    Some(value) => value,
                    None => RawValue::from_string("null".into()).map_err(de::Error::custom)?,
                };
                Ok(RunRequest { value, context })
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

impl RunRequest {
    /// `__OW_<FIELD>` variables for every context field, as OpenWhisk runtimes export them.
    pub fn activation_env(&self) -> Vec<(String, String)> {
        self.context
            .iter()
            .map(|(k, v)| (format!("__OW_{}", k.to_uppercase()), env_text(v)))
            .collect()
    }

    /// The activation deadline (epoch milliseconds), sent as a string or a number.
    pub fn deadline_epoch_ms(&self) -> Option<u64> {
        match self.context.get("deadline")? {
            Value::String(s) => s.trim().parse().ok(),
            Value::Number(n) => n.as_u64(),
            _ => None,
        }
    }
}

/// The text an environment variable gets for a JSON value: strings as they are, the rest as JSON.
pub fn env_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Whether `name=value` can be a WASI environment variable: the guest reads each as one
/// NUL-terminated `name=value` string, so a name must be non-empty without `=` or NUL and a
/// value without NUL (every runtime would pass such an entry differently, or refuse it).
pub fn check_env(name: &str, value: &str) -> Result<(), String> {
    if !name.is_empty() && !name.contains(['=', '\0']) && !value.contains('\0') {
        return Ok(());
    }
    let shown: String = name.chars().take(64).collect();
    Err(format!(
        "the environment variable {shown:?} cannot be passed to the action: names must be non-empty \
         without '=' or NUL, values without NUL"
    ))
}

/// A string borrowed from the body where it can be. (serde borrows a `Cow<str>` only where it
/// is the field's whole type; inside an `Option` it would always be copied.)
fn borrowed_text<'de: 'a, 'a, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'a, str>>, D::Error> {
    #[derive(Deserialize)]
    struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
    Ok(Option::<Text<'a>>::deserialize(d)?.map(|Text(text)| text))
}

/// Annotations arrive as JSON booleans or as strings ("true") depending on how they were set.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_context_becomes_ow_variables() {
        let run: RunRequest = serde_json::from_str(
            r#"{"value":{"a":1},"namespace":"guest","activation_id":"abc","deadline":"1700000060000"}"#,
        )
        .unwrap();
        let env = run.activation_env();
        assert!(env.contains(&("__OW_NAMESPACE".into(), "guest".into())));
        assert!(env.contains(&("__OW_ACTIVATION_ID".into(), "abc".into())));
        assert!(!env.iter().any(|(name, _)| name == "__OW_VALUE"));
        assert_eq!(run.deadline_epoch_ms(), Some(1_700_000_060_000));
    }

    #[test]
    fn run_parameters_pass_as_sent() {
        let run: RunRequest =
            serde_json::from_str(r#"{"value": {"n": 1.50, "big": 123456789012345678901234}}"#)
                .unwrap();
        assert_eq!(
            run.value.get(),
            r#"{"n": 1.50, "big": 123456789012345678901234}"#
        );
        let absent: RunRequest = serde_json::from_str(r#"{"activation_id": "a"}"#).unwrap();
        assert_eq!(absent.value.get(), "null");
        // JSON's grammar allows a lone surrogate escape; the guest's parser decides about it.
        let lone: RunRequest = serde_json::from_str(r#"{"value": "\udc00"}"#).unwrap();
        assert_eq!(lone.value.get(), r#""\udc00""#);
        assert!(serde_json::from_str::<RunRequest>(r#"{"value": 1, "value": 2}"#).is_err());
        assert!(serde_json::from_str::<RunRequest>("[1]").is_err());
    }

    #[test]
    fn environment_entries_a_guest_could_not_read_are_refused() {
        assert!(check_env("__OW_NAMESPACE", "guest").is_ok());
        assert!(check_env("A", "").is_ok());
        for (name, value) in [("", "x"), ("A=B", "x"), ("A\0", "x"), ("A", "x\0y")] {
            let error = check_env(name, value).unwrap_err();
            assert!(error.contains("cannot be passed to the action"), "{error}");
        }
    }

    #[test]
    fn init_code_is_borrowed_from_the_body_unless_unescaped() {
        let code = |body: &'static str| {
            serde_json::from_str::<InitRequest>(body)
                .unwrap()
                .value
                .unwrap()
                .code
        };
        assert!(matches!(
            code(r#"{"value": {"code": "AGFzbQ==", "binary": true}}"#),
            Some(Cow::Borrowed("AGFzbQ=="))
        ));
        assert!(matches!(
            code(r#"{"value": {"code": "(module)\n"}}"#),
            Some(Cow::Owned(text)) if text == "(module)\n"
        ));
        assert!(code(r#"{"value": {"code": null}}"#).is_none());
        assert!(code(r#"{"value": {}}"#).is_none());
        assert!(serde_json::from_str::<InitRequest>(r#"{"value": {"code": 1}}"#).is_err());
    }
}
