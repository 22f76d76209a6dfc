//! The `net_access` capability: the `openwhisk::http_get`/`http_read` imports, through the
//! executor's one [`HttpClient`] and its policy of reachable hosts, each container with an
//! [`HttpGetter`] of its own.

use std::sync::Arc;

use futures_util::{FutureExt, future::BoxFuture};
use serde_json::Value;

use super::{Capability, CapabilityId, Descriptor, Grant, GrantError, Granted};
use crate::net::{HttpClient, HttpGetter, IMPORT_MODULE};

pub static DESCRIPTOR: Descriptor = Descriptor {
    id: CapabilityId::NetAccess,
    annotation: "net_access",
    namespaces_option: "--net-namespaces",
    imports: &[(IMPORT_MODULE, "http_get"), (IMPORT_MODULE, "http_read")],
};

/// Grants every container that asks a getter of its own over the shared client.
pub struct NetAccess {
    pub client: Arc<HttpClient>,
}

impl Capability for NetAccess {
    fn descriptor(&self) -> &'static Descriptor {
        &DESCRIPTOR
    }

    fn asks(&self, value: &Value) -> Result<bool, String> {
        asked(value)
    }

    fn grant<'a>(
        &'a self,
        _namespace: Option<&'a str>,
        _value: &'a Value,
    ) -> BoxFuture<'a, Result<Granted, GrantError>> {
        let getter: Granted = Arc::new(HttpGetter::new(Arc::clone(&self.client)));
        async move { Ok(getter) }.boxed()
    }
}

/// Whether the annotation asks for the capability: a boolean as OpenWhisk's clients send it,
/// `true`, `"true"` (any case) or a number other than 0; `false`, `"false"`, 0 and `null` ask
/// for nothing.
fn asked(value: &Value) -> Result<bool, String> {
    match value {
        Value::Bool(asked) => Ok(*asked),
        Value::Null => Ok(false),
        Value::String(text) if text.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(text) if text.eq_ignore_ascii_case("false") => Ok(false),
        Value::Number(n) if n.as_i64().is_some() => Ok(n.as_i64() != Some(0)),
        other => Err(format!(
            "the `net_access` annotation must be true or false, not {other}"
        )),
    }
}

impl Grant for HttpGetter {
    const ID: CapabilityId = CapabilityId::NetAccess;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_annotation_is_a_boolean_in_any_of_its_spellings() {
        for yes in [json!(true), json!("true"), json!("TRUE"), json!(1)] {
            assert_eq!(asked(&yes), Ok(true), "{yes}");
        }
        for no in [json!(false), json!("False"), json!(0), json!(null)] {
            assert_eq!(asked(&no), Ok(false), "{no}");
        }
        for bad in [json!("yes"), json!([true]), json!(1.5)] {
            assert!(asked(&bad).is_err(), "{bad}");
        }
    }
}
