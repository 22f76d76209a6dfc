//! What an action may ask for beyond the sandbox, by annotation: one [`Capability`] per kind
//! (a directory of its namespace, outbound HTTP GET) reads its annotation and grants what a
//! container holds, within the operator's policy ([`Capabilities`]). A container's grants are a
//! [`GrantSet`] (the key under which backends keep linked forms of shared code) and the granted
//! values ([`Grants`]); each backend provides the imports of the capabilities in a set by a
//! `match` over [`CapabilityId`] (wasmtime's `capabilities.rs`, wasmer's `imports.rs`, WAMR's
//! `natives.rs`), which does not compile until a new capability has its arm.
//!
//! Adding a capability: a variant of [`CapabilityId`], a module here with its [`Descriptor`],
//! its [`Capability`] and its [`Grant`], an allow-list option in `config.rs`, its offer in
//! `Executor::new` (`service.rs`), and the arm of each backend.

pub mod allow_list;
pub mod dir;
pub mod net_access;

use std::{any::Any, collections::BTreeMap, fmt, sync::Arc};

use futures_util::future::BoxFuture;
use serde_json::Value;
use thiserror::Error;

use self::allow_list::AllowList;

/// Every capability the executor knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CapabilityId {
    /// A directory beneath the action's namespace (`dir`).
    Dir,
    /// `openwhisk::http_get` (`net_access`).
    NetAccess,
}

impl CapabilityId {
    pub const ALL: [CapabilityId; 2] = [CapabilityId::Dir, CapabilityId::NetAccess];

    pub fn descriptor(self) -> &'static Descriptor {
        match self {
            CapabilityId::Dir => &dir::DESCRIPTOR,
            CapabilityId::NetAccess => &net_access::DESCRIPTOR,
        }
    }

    fn bit(self) -> u32 {
        1 << self as u32
    }
}

/// Why an /init's annotations were not granted, and whose fault that is.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum GrantError {
    /// The annotations ask for what the action may not have, or in a shape no grant takes:
    /// the developer's error (502, as any refused /init).
    #[error("{0}")]
    Refused(String),
    /// The grant is allowed but this executor cannot provide it as configured (e.g. quotas it
    /// cannot enforce): the operator's error (500), whatever the action.
    #[error("{0}")]
    Unavailable(String),
}

impl From<String> for GrantError {
    fn from(refusal: String) -> Self {
        GrantError::Refused(refusal)
    }
}

/// What is known of a capability before anything is granted.
#[derive(Debug)]
pub struct Descriptor {
    pub id: CapabilityId,
    /// The annotation that asks for it.
    pub annotation: &'static str,
    /// The operator's option that lists the namespaces which may have it.
    pub namespaces_option: &'static str,
    /// The host functions it adds, `(module, name)`; a module importing one without the grant
    /// is refused at /init with a hint naming the annotation.
    pub imports: &'static [(&'static str, &'static str)],
}

/// The capability that provides the import `module::name`, if one does.
pub fn provider_of(module: &str, name: &str) -> Option<&'static Descriptor> {
    CapabilityId::ALL
        .iter()
        .map(|id| id.descriptor())
        .find(|d| d.imports.contains(&(module, name)))
}

/// The capabilities a container holds, as a set: the key of a module's linked forms.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct GrantSet(u32);

impl GrantSet {
    pub fn contains(self, id: CapabilityId) -> bool {
        self.0 & id.bit() != 0
    }

    pub fn with(self, id: CapabilityId) -> Self {
        GrantSet(self.0 | id.bit())
    }

    pub fn iter(self) -> impl Iterator<Item = CapabilityId> {
        CapabilityId::ALL
            .into_iter()
            .filter(move |id| self.contains(*id))
    }

    /// Whether `module::name` is the import of a capability outside this set: a module that
    /// imports it must be refused, whatever a runtime's registry of natives says.
    pub fn withholds(self, module: &str, name: &str) -> bool {
        provider_of(module, name).is_some_and(|d| !self.contains(d.id))
    }
}

impl fmt::Debug for GrantSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(self.iter().map(|id| id.descriptor().annotation))
            .finish()
    }
}

/// What a capability grants a container, found by its type ([`Grants::get`]).
pub trait Grant: Any + Send + Sync {
    const ID: CapabilityId;
}

type Granted = Arc<dyn Any + Send + Sync>;

/// What a container was granted, decided once at /init.
#[derive(Clone, Default)]
pub struct Grants {
    set: GrantSet,
    held: Vec<(CapabilityId, Granted)>,
}

impl Grants {
    pub fn set(&self) -> GrantSet {
        self.set
    }

    /// The grant of type `G`, if the container has it.
    pub fn get<G: Grant>(&self) -> Option<Arc<G>> {
        let (_, held) = self.held.iter().find(|(id, _)| *id == G::ID)?;
        Arc::clone(held).downcast::<G>().ok()
    }

    fn insert(&mut self, id: CapabilityId, granted: Granted) {
        self.set = self.set.with(id);
        self.held.push((id, granted));
    }
}

impl fmt::Debug for Grants {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.set.fmt(f)
    }
}

/// One kind of capability: reads its annotation and grants it.
pub trait Capability: Send + Sync {
    fn descriptor(&self) -> &'static Descriptor;

    /// Whether the annotation's `value` asks for the capability at all (`net_access: false`
    /// does not); a value of the wrong shape is refused with the text /init answers.
    fn asks(&self, value: &Value) -> Result<bool, String>;

    /// Grants what `value` asks for to a container of `namespace`, which the operator's policy
    /// lets have the capability.
    fn grant<'a>(
        &'a self,
        namespace: Option<&'a str>,
        value: &'a Value,
    ) -> BoxFuture<'a, Result<Granted, GrantError>>;
}

/// A capability as this executor offers it: to the namespaces of its allow list.
struct Offer {
    capability: Box<dyn Capability>,
    namespaces: AllowList,
}

/// The capabilities this executor offers and to whom.
#[derive(Default)]
pub struct Capabilities {
    offers: Vec<Offer>,
}

impl Capabilities {
    /// Offers `capability` to the namespaces of `namespaces`.
    pub fn offer(mut self, capability: impl Capability + 'static, namespaces: AllowList) -> Self {
        self.offers.push(Offer {
            capability: Box::new(capability),
            namespaces,
        });
        self
    }

    /// Grants what the annotations of an /init for `namespace` ask for, or says why not.
    pub async fn grant(
        &self,
        namespace: Option<&str>,
        annotations: &BTreeMap<String, Value>,
    ) -> Result<Grants, GrantError> {
        let mut grants = Grants::default();
        for offer in &self.offers {
            let descriptor = offer.capability.descriptor();
            let Some(value) = annotations.get(descriptor.annotation) else {
                continue;
            };
            if !offer.capability.asks(value)? {
                continue;
            }
            if !offer.namespaces.allows(namespace) {
                return Err(GrantError::Refused(format!(
                    "the `{}` annotation is not allowed for {} on this executor ({})",
                    descriptor.annotation,
                    shown_namespace(namespace),
                    descriptor.namespaces_option
                )));
            }
            let granted = offer.capability.grant(namespace, value).await?;
            grants.insert(descriptor.id, granted);
        }
        Ok(grants)
    }
}

/// A namespace as an error message names it.
fn shown_namespace(namespace: Option<&str>) -> String {
    match namespace {
        Some(namespace) => format!("namespace {namespace:?}"),
        None => "an /init that names no namespace".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    struct Counter;

    impl Grant for Counter {
        const ID: CapabilityId = CapabilityId::NetAccess;
    }

    struct Asked;

    impl Capability for Asked {
        fn descriptor(&self) -> &'static Descriptor {
            &net_access::DESCRIPTOR
        }

        fn asks(&self, value: &Value) -> Result<bool, String> {
            value.as_bool().ok_or_else(|| "not a boolean".to_owned())
        }

        fn grant<'a>(
            &'a self,
            _namespace: Option<&'a str>,
            _value: &'a Value,
        ) -> BoxFuture<'a, Result<Granted, GrantError>> {
            async { Ok(Arc::new(Counter) as Granted) }.boxed()
        }
    }

    #[test]
    fn grants_follow_the_annotations_within_the_policy() {
        let offered = Capabilities::default().offer(Asked, AllowList::new(&["alice".into()]));
        let grant = |namespace, annotations: Value| {
            let annotations = serde_json::from_value(annotations).unwrap();
            offered
                .grant(namespace, &annotations)
                .now_or_never()
                .unwrap()
        };
        let granted = grant(Some("alice"), serde_json::json!({"net_access": true})).unwrap();
        assert!(granted.set().contains(CapabilityId::NetAccess));
        assert!(!granted.set().contains(CapabilityId::Dir));
        assert!(granted.get::<Counter>().is_some());
        // Not asked for: nothing granted, and the policy does not matter.
        let none = grant(Some("bob"), serde_json::json!({"net_access": false})).unwrap();
        assert_eq!(none.set(), GrantSet::default());
        let refused = grant(Some("bob"), serde_json::json!({"net_access": true})).unwrap_err();
        assert!(
            matches!(&refused, GrantError::Refused(why) if why.contains("--net-namespaces")),
            "{refused}"
        );
        assert!(grant(None, serde_json::json!({"net_access": 3})).is_err());
    }

    #[test]
    fn imports_belong_to_their_capability() {
        let without = GrantSet::default();
        let with_net = without.with(CapabilityId::NetAccess);
        assert!(without.withholds("openwhisk", "http_get"));
        assert!(!with_net.withholds("openwhisk", "http_get"));
        assert!(!without.withholds("wasi_snapshot_preview1", "fd_write"));
        assert_eq!(
            provider_of("openwhisk", "http_read").map(|d| d.annotation),
            Some("net_access")
        );
        assert_eq!(format!("{with_net:?}"), r#"{"net_access"}"#);
    }
}
