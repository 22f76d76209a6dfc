//! The operator's policy per capability: which namespaces may use it. A list of names, or `*`
//! for every namespace (the default).

use std::collections::HashSet;

/// Namespaces allowed to use one capability.
#[derive(Debug, Clone)]
pub struct AllowList {
    /// `None`: every namespace, also an /init that names none.
    names: Option<HashSet<String>>,
}

impl AllowList {
    /// From the operator's list: `*` anywhere in it allows every namespace; an empty list none.
    pub fn new(entries: &[String]) -> Self {
        let entries: Vec<&str> = entries
            .iter()
            .map(|e| e.trim())
            .filter(|e| !e.is_empty())
            .collect();
        let names =
            (!entries.contains(&"*")).then(|| entries.iter().map(|e| e.to_string()).collect());
        AllowList { names }
    }

    /// Whether `namespace` (`None`: the /init named none) may use the capability.
    pub fn allows(&self, namespace: Option<&str>) -> bool {
        match (&self.names, namespace) {
            (None, _) => true,
            (Some(names), Some(namespace)) => names.contains(namespace),
            (Some(_), None) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_names_who_may_and_a_star_lets_everyone() {
        let everyone = AllowList::new(&["*".into()]);
        assert!(everyone.allows(Some("alice")) && everyone.allows(None));
        let some = AllowList::new(&["alice".into(), " bob ".into()]);
        assert!(some.allows(Some("alice")) && some.allows(Some("bob")));
        assert!(!some.allows(Some("carol")) && !some.allows(None));
        assert!(!some.allows(Some("Alice")), "namespaces are case-sensitive");
        let nobody = AllowList::new(&[]);
        assert!(!nobody.allows(Some("alice")));
    }
}
