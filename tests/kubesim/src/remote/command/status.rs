//! The `metav1.Status` a remote command ends with on the error stream. Serialized with
//! Go's field order and `omitempty`s, so the bytes match what the kubelet writes
//! (`{"metadata":{},"status":"Success"}` and the `NonZeroExitCode` form kubectl reads the
//! exit code from).

use serde::Serialize;

/// A remote command's end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Status {
    metadata: Empty,
    pub status: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Details>,
    #[serde(skip_serializing_if = "is_zero")]
    pub code: u16,
}

/// `ListMeta`, always written, always empty here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Empty {}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Details {
    pub causes: Vec<Cause>,
}

/// A `StatusCause`; Go names its `Type` field `reason` in JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cause {
    #[serde(skip_serializing_if = "str::is_empty")]
    pub reason: &'static str,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

fn is_zero(c: &u16) -> bool {
    *c == 0
}

impl Status {
    /// A clean end.
    pub fn success() -> Status {
        Status {
            metadata: Empty {},
            status: "Success",
            message: String::new(),
            reason: "",
            details: None,
            code: 0,
        }
    }

    /// A non-zero exit, which kubectl turns into its own exit code.
    pub fn exit_code(code: i32) -> Status {
        Status {
            status: "Failure",
            message: format!("command terminated with non-zero exit code: exit status {code}"),
            reason: "NonZeroExitCode",
            details: Some(Details {
                causes: vec![Cause {
                    reason: "ExitCode",
                    message: code.to_string(),
                }],
            }),
            ..Status::success()
        }
    }

    /// A command that could not run (`apierrors.NewInternalError`).
    pub fn internal(msg: &str) -> Status {
        Status {
            status: "Failure",
            message: format!("Internal error occurred: {msg}"),
            reason: "InternalError",
            details: Some(Details {
                causes: vec![Cause {
                    reason: "",
                    message: msg.to_string(),
                }],
            }),
            code: 500,
            ..Status::success()
        }
    }

    pub fn is_success(&self) -> bool {
        self.status == "Success"
    }

    /// The JSON the v4 and v5 protocols write.
    pub fn to_json(&self) -> Vec<u8> {
        // A struct of strings and numbers always serializes.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// What the v1-v3 protocols write: plain text, and only on failure.
    pub fn legacy_text(&self) -> Option<String> {
        (!self.is_success()).then(|| self.message.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_match_the_kubelets() {
        assert_eq!(
            String::from_utf8(Status::success().to_json()).unwrap(),
            r#"{"metadata":{},"status":"Success"}"#
        );
        assert_eq!(
            String::from_utf8(Status::exit_code(3).to_json()).unwrap(),
            r#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: exit status 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#
        );
        assert_eq!(
            String::from_utf8(Status::internal("boom").to_json()).unwrap(),
            r#"{"metadata":{},"status":"Failure","message":"Internal error occurred: boom","reason":"InternalError","details":{"causes":[{"message":"boom"}]},"code":500}"#
        );
        assert_eq!(Status::success().legacy_text(), None);
        assert_eq!(
            Status::exit_code(1).legacy_text().unwrap(),
            "command terminated with non-zero exit code: exit status 1"
        );
    }
}
