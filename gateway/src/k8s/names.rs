//! Kubernetes object names as the API validates them, checked before a namespace glob, a
//! pod router or a leaf path sees a name that came in a request.
//!
//! Namespaces and container names are DNS-1123 labels, pod names DNS-1123 subdomains
//! (`k8s.io/apimachinery/pkg/util/validation`): nothing else can name a real object, so a
//! name that fails here is refused before it is used, whatever it decodes to. Also here:
//! kube-apiserver's own check on a name from a path (`IsValidPathSegmentName`), whose
//! wording its 400 carries, and the percent-decoding of one path segment.
//!
//! Pure functions; no I/O, no HTTP types.

use std::fmt;

/// The longest DNS-1123 label.
const LABEL_MAX: usize = 63;
/// The longest DNS-1123 subdomain.
const SUBDOMAIN_MAX: usize = 253;

/// A DNS-1123 label: 1 to 63 of `[a-z0-9-]`, starting and ending alphanumeric.
pub fn is_label(s: &str) -> bool {
    s.len() <= LABEL_MAX && is_label_body(s)
}

/// A DNS-1123 subdomain: labels joined by `.`, 253 bytes at most.
pub fn is_subdomain(s: &str) -> bool {
    s.len() <= SUBDOMAIN_MAX && s.split('.').all(is_label_body)
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, any length.
fn is_label_body(s: &str) -> bool {
    let b = s.as_bytes();
    let alnum = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            alnum(first) && alnum(last) && b.iter().all(|c| alnum(c) || *c == b'-')
        }
        _ => false,
    }
}

/// Which name of a pod call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Namespace,
    Pod,
    Container,
}

/// A name that cannot be a Kubernetes object's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameError {
    pub part: Part,
    pub name: String,
}

impl fmt::Display for NameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, rule) = match self.part {
            Part::Namespace => ("namespace", "a lowercase RFC 1123 label"),
            Part::Pod => ("pod name", "a lowercase RFC 1123 subdomain"),
            Part::Container => ("container name", "a lowercase RFC 1123 label"),
        };
        write!(f, "invalid {what} {:?}: must be {rule}", self.name)
    }
}

impl std::error::Error for NameError {}

/// The names of one pod call: namespace, pod and (when named) container, each valid.
pub fn check_pod_call(
    namespace: &str,
    pod: &str,
    container: Option<&str>,
) -> Result<(), NameError> {
    let fail = |part, name: &str| {
        Err(NameError {
            part,
            name: name.to_string(),
        })
    };
    if !is_label(namespace) {
        return fail(Part::Namespace, namespace);
    }
    if !is_subdomain(pod) {
        return fail(Part::Pod, pod);
    }
    match container {
        Some(c) if !is_label(c) => fail(Part::Container, c),
        _ => Ok(()),
    }
}

/// kube-apiserver's `IsValidPathSegmentName`: what a name taken from a path may not be
/// (`.`, `..`) or contain (`/`, `%`), in its words; empty when the name passes.
pub fn path_segment_problems(name: &str) -> Vec<&'static str> {
    match name {
        "." => return vec!["may not be '.'"],
        ".." => return vec!["may not be '..'"],
        _ => {}
    }
    let mut problems = Vec::new();
    if name.contains('/') {
        problems.push("may not contain '/'");
    }
    if name.contains('%') {
        problems.push("may not contain '%'");
    }
    problems
}

/// One path segment, percent-decoded as a server reading the path decodes it (`%2F`
/// becomes `/`; `+` stays `+`). `None` for a bad escape or bytes that are not UTF-8.
pub fn decode_segment(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let text = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(text, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_lowercase_alphanumerics_and_inner_dashes() {
        for ok in ["a", "team-a", "web-0", "0", &"a".repeat(63)] {
            assert!(is_label(ok), "{ok}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "Team-a",
            "a.b",
            "a_b",
            "a/b",
            "..",
            "x%2F..",
            &"a".repeat(64),
        ] {
            assert!(!is_label(bad), "{bad}");
        }
    }

    #[test]
    fn subdomains_are_dotted_labels() {
        for ok in ["web-0", "a.b.c", "kube-proxy-x.1"] {
            assert!(is_subdomain(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            "a..b",
            ".a",
            "a.",
            "x/..",
            "A.b",
            &"a".repeat(254),
        ] {
            assert!(!is_subdomain(bad), "{bad}");
        }
        assert!(is_subdomain(&vec!["a".repeat(63); 3].join(".")));
    }

    #[test]
    fn a_pod_call_names_its_bad_part() {
        assert_eq!(check_pod_call("team-a", "web-0", Some("app")), Ok(()));
        assert_eq!(check_pod_call("team-a", "web-0", None), Ok(()));
        let e = check_pod_call("team-a-x/..", "web-0", None).unwrap_err();
        assert_eq!(e.part, Part::Namespace);
        assert_eq!(
            e.to_string(),
            "invalid namespace \"team-a-x/..\": must be a lowercase RFC 1123 label"
        );
        let e = check_pod_call("team-a", "x/../db-0", None).unwrap_err();
        assert_eq!(e.part, Part::Pod);
        let e = check_pod_call("team-a", "web-0", Some("a.b")).unwrap_err();
        assert_eq!(e.part, Part::Container);
    }

    #[test]
    fn path_segments_are_checked_in_kube_apiservers_words() {
        assert_eq!(path_segment_problems("web-0"), Vec::<&str>::new());
        assert_eq!(path_segment_problems(".."), ["may not be '..'"]);
        assert_eq!(path_segment_problems("."), ["may not be '.'"]);
        assert_eq!(
            path_segment_problems("x/%41"),
            ["may not contain '/'", "may not contain '%'"]
        );
    }

    #[test]
    fn segments_decode_percent_escapes_only() {
        assert_eq!(
            decode_segment("x%2F..%2fteam-b").as_deref(),
            Some("x/../team-b")
        );
        assert_eq!(decode_segment("a+b").as_deref(), Some("a+b"));
        assert_eq!(decode_segment("%").as_deref(), None);
        assert_eq!(decode_segment("%zz").as_deref(), None);
        assert_eq!(decode_segment("%ff").as_deref(), None);
        assert_eq!(decode_segment("web-0").as_deref(), Some("web-0"));
    }
}
