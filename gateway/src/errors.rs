//! Error chains, printed for people: the one place that walks `source()`.
//!
//! Two readers want two prints of the same chain. A client's error answer and its metric
//! want the innermost cause ("connection refused", not "client error (Connect)"); a log
//! line or `/status` wants the whole chain, each message once. Both are [`describe`] with
//! the [`Causes`] they need. A bottom helper: it imports nothing from the crate.

use std::error::Error;

/// Which part of an error chain [`describe`] prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Causes {
    /// The innermost cause alone: `connection refused`.
    Innermost,
    /// The error and each cause whose text is not already printed, joined by `": "`:
    /// `list failed: client error (Connect): invalid peer certificate: UnknownIssuer`.
    All,
}

/// The error and its causes, outermost first.
pub fn chain<'a>(
    err: &'a (dyn Error + 'static),
) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(Some(err), |&e| e.source())
}

/// `err`'s chain as text, as `causes` says.
pub fn describe(err: &(dyn Error + 'static), causes: Causes) -> String {
    match causes {
        Causes::Innermost => chain(err)
            .last()
            .expect("a chain holds its error")
            .to_string(),
        Causes::All => {
            let mut out = err.to_string();
            for cause in chain(err).skip(1) {
                let text = cause.to_string();
                // Many errors repeat their source's message in their own (`{0}`).
                if !out.contains(&text) {
                    out.push_str(": ");
                    out.push_str(&text);
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("list failed")]
    struct Outer(#[source] Middle);

    /// Repeats its source's message, as `#[error("{0}")]` wrappers do.
    #[derive(Debug, thiserror::Error)]
    #[error("client error (Connect): {0}")]
    struct Middle(#[source] std::io::Error);

    fn outer() -> Outer {
        Outer(Middle(std::io::Error::other("invalid peer certificate")))
    }

    #[test]
    fn innermost_prints_the_root_cause_alone() {
        assert_eq!(
            describe(&outer(), Causes::Innermost),
            "invalid peer certificate"
        );
        let alone = std::io::Error::other("connection refused");
        assert_eq!(describe(&alone, Causes::Innermost), "connection refused");
    }

    #[test]
    fn all_prints_each_message_once() {
        assert_eq!(
            describe(&outer(), Causes::All),
            "list failed: client error (Connect): invalid peer certificate"
        );
    }

    #[test]
    fn the_chain_starts_with_the_error_itself() {
        let texts: Vec<String> = chain(&outer()).map(|e| e.to_string()).collect();
        assert_eq!(
            texts,
            [
                "list failed",
                "client error (Connect): invalid peer certificate",
                "invalid peer certificate"
            ]
        );
    }
}
