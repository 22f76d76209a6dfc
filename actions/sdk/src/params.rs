//! Typed access to parameters, with errors (never panics) for missing or mistyped values.

use crate::{Error, Value, error};

fn field<'a>(params: &'a Value, key: &str) -> Option<&'a Value> {
    params.get(key).filter(|v| !v.is_null())
}

/// A required number.
pub fn number(params: &Value, key: &str) -> Result<f64, Error> {
    match field(params, key) {
        None => Err(error!("missing parameter '{key}'")),
        Some(v) => v
            .as_f64()
            .ok_or_else(|| error!("parameter '{key}' must be a number, got {v}")),
    }
}

/// An optional non-negative integer, `default` when absent or null.
pub fn u64_or(params: &Value, key: &str, default: u64) -> Result<u64, Error> {
    match field(params, key) {
        None => Ok(default),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| error!("parameter '{key}' must be a non-negative integer, got {v}")),
    }
}

/// An optional string, `default` when absent or null.
pub fn str_or<'a>(params: &'a Value, key: &str, default: &'a str) -> Result<&'a str, Error> {
    match field(params, key) {
        None => Ok(default),
        Some(v) => v
            .as_str()
            .ok_or_else(|| error!("parameter '{key}' must be a string, got {v}")),
    }
}

/// An optional string, `None` when absent or null.
pub fn opt_str<'a>(params: &'a Value, key: &str) -> Result<Option<&'a str>, Error> {
    match field(params, key) {
        None => Ok(None),
        Some(v) => v
            .as_str()
            .map(Some)
            .ok_or_else(|| error!("parameter '{key}' must be a string, got {v}")),
    }
}

/// An optional boolean, `default` when absent or null.
pub fn bool_or(params: &Value, key: &str, default: bool) -> Result<bool, Error> {
    match field(params, key) {
        None => Ok(default),
        Some(v) => v
            .as_bool()
            .ok_or_else(|| error!("parameter '{key}' must be a boolean, got {v}")),
    }
}

/// An optional list of strings, empty when absent or null.
pub fn strings<'a>(params: &'a Value, key: &str) -> Result<Vec<&'a str>, Error> {
    match field(params, key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .ok_or_else(|| error!("parameter '{key}' must be a list of strings"))
            })
            .collect(),
        Some(v) => Err(error!(
            "parameter '{key}' must be a list of strings, got {v}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    #[test]
    fn typed_access() {
        let p = json!({"n": 3, "f": 1.5, "s": "x", "b": true, "l": ["a"], "z": null});
        assert_eq!(number(&p, "f").unwrap(), 1.5);
        assert!(number(&p, "missing").is_err());
        assert!(number(&p, "s").is_err());
        assert_eq!(u64_or(&p, "n", 7).unwrap(), 3);
        assert_eq!(u64_or(&p, "z", 7).unwrap(), 7);
        assert!(u64_or(&p, "f", 7).is_err());
        assert_eq!(str_or(&p, "s", "d").unwrap(), "x");
        assert_eq!(opt_str(&p, "none").unwrap(), None);
        assert!(bool_or(&p, "b", false).unwrap());
        assert_eq!(strings(&p, "l").unwrap(), vec!["a"]);
        assert!(strings(&p, "s").is_err());
        // Not an object at all: everything is "absent".
        assert_eq!(u64_or(&json!([1]), "n", 2).unwrap(), 2);
    }
}
