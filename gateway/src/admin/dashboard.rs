//! The dashboard's static files, embedded in the binary (no build step, nothing fetched
//! from elsewhere, works offline): `GET /` is the page, `/dashboard.js` and
//! `/dashboard.css` its script and style. The files hold no gateway data, so they are
//! served to any peer; their data comes from `/status` (access-checked: a remote browser
//! sends the admin token it was given in the page) and `/metrics`, both polled by the
//! script. `Content-Security-Policy: default-src 'self'` lets the page load and call
//! nothing but this listener and run no inline script.

use http::{Response, header};

use crate::proxy::{Body, full};

/// `(path, content type, body)` of each file.
const FILES: [(&str, &str, &str); 3] = [
    (
        "/",
        "text/html; charset=utf-8",
        include_str!("dashboard/index.html"),
    ),
    (
        "/dashboard.js",
        "text/javascript; charset=utf-8",
        include_str!("dashboard/dashboard.js"),
    ),
    (
        "/dashboard.css",
        "text/css; charset=utf-8",
        include_str!("dashboard/dashboard.css"),
    ),
];

/// The policy every dashboard file is served with.
const CSP: &str = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The dashboard file at `path`, if it is one.
pub fn file(path: &str) -> Option<Response<Body>> {
    let (_, content_type, body) = FILES.iter().find(|(p, _, _)| *p == path)?;
    Some(
        Response::builder()
            .header(header::CONTENT_TYPE, *content_type)
            .header(header::CONTENT_SECURITY_POLICY, CSP)
            .header(header::X_CONTENT_TYPE_OPTIONS, "nosniff")
            .header(header::REFERRER_POLICY, "no-referrer")
            .header(header::CACHE_CONTROL, "no-cache")
            .body(full(*body))
            .expect("static parts make a valid response"),
    )
}

/// Whether `path` is one of the dashboard's files.
pub fn is_file(path: &str) -> bool {
    FILES.iter().any(|(p, _, _)| *p == path)
}
