//! The README is the front door and `docs/` the reference, one chapter per front (issue 40).
//! Nothing the README promised before the split was dropped: every heading it had then is
//! still a heading, word for word, in the README, a `docs/` page or `deploy/README.md`. The
//! README stays short, and the relative links of the README and the docs name files (and,
//! in Markdown files, headings) that exist.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use leafgate_tests::plugins::repo_root;

/// Every heading of the README as it was before the split (`git show 54fcd0f:README.md |
/// grep '^#'`), without its `#`s: each must stay a heading, at any level, somewhere.
const OLD_README_HEADINGS: [&str; 21] = [
    "leafgate",
    "The two commands",
    "Command line",
    "Config reference",
    "`[admin]`",
    "`[timeouts]` (defaults for every route; a route's `timeouts` table overrides any)",
    "`[[listener]]`",
    "`[[tenant]]`",
    "`[[leaf]]`",
    r#"The node API (`kind = "node-api"`)"#,
    r#"The Kubernetes API front (`kind = "kube-api"`)"#,
    "`[[route]]`",
    "`[kubernetes]` (the root cluster; optional)",
    "`[kubernetes.ingress]` (leafgate as an Ingress controller)",
    "`[[virtual_node]]`",
    "Reload",
    "Examples",
    "Security model",
    "Deployment (Kubernetes)",
    "How it runs",
    "Layout",
];

/// The most lines the README may have.
const README_MAX_LINES: usize = 200;

/// The README, `deploy/README.md` and every Markdown file under `docs/`, sorted.
fn pages() -> Vec<PathBuf> {
    let root = repo_root();
    let mut pages = vec![root.join("README.md"), root.join("deploy/README.md")];
    let mut folders = vec![root.join("docs")];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{folder:?}: {e}")) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// The lines of `text` outside fenced code blocks, with their line numbers (from 1).
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            lines.push((i + 1, line));
        }
    }
    lines
}

/// The ATX headings of `text` (`#` to `######`, then a space), without their `#`s.
fn headings(text: &str) -> Vec<String> {
    prose(text)
        .into_iter()
        .filter_map(|(_, line)| {
            let hashes = line.len() - line.trim_start_matches('#').len();
            let rest = &line[hashes..];
            ((1..=6).contains(&hashes) && rest.starts_with(' ')).then(|| rest.trim().to_string())
        })
        .collect()
}

/// GitHub's anchor for a heading: lowercased, spaces to `-`, and every character but
/// letters, digits, `-` and `_` left out.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings, as GitHub numbers them: a repeated one gets
/// `-1`, `-2`, ... (github-slugger's rule).
fn anchors(text: &str) -> Vec<String> {
    let mut occurrences: HashMap<String, u32> = HashMap::new();
    let mut all = Vec::new();
    for heading in headings(text) {
        let base = anchor(&heading);
        let mut slug = base.clone();
        while occurrences.contains_key(&slug) {
            let n = occurrences.get_mut(&base).unwrap();
            *n += 1;
            slug = format!("{base}-{n}");
        }
        occurrences.insert(slug.clone(), 0);
        all.push(slug);
    }
    all
}

/// The targets of the inline links `[text](target)` in `line`, outside code spans.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut in_code = false;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'`' => in_code = !in_code,
            b']' if !in_code && bytes.get(i + 1) == Some(&b'(') => {
                if let Some(end) = line[i + 2..].find(')') {
                    let target = line[i + 2..i + 2 + end].trim();
                    let target = target.split_whitespace().next().unwrap_or("");
                    targets.push(target.trim_matches(['<', '>']).to_string());
                    i += 2 + end;
                }
            }
            _ => {}
        }
        i += 1;
    }
    targets
}

#[test]
fn every_heading_of_the_old_readme_is_still_a_heading() {
    let found: Vec<(PathBuf, Vec<String>)> = pages()
        .into_iter()
        .map(|p| {
            let h = headings(&read(&p));
            (p, h)
        })
        .collect();
    let lost: Vec<&str> = OLD_README_HEADINGS
        .into_iter()
        .filter(|wanted| !found.iter().any(|(_, hs)| hs.iter().any(|h| h == wanted)))
        .collect();
    assert!(
        lost.is_empty(),
        "headings of the old README found in no page (README.md, docs/, deploy/README.md): {lost:#?}"
    );
}

#[test]
fn the_readme_is_a_front_door_of_at_most_200_lines() {
    let readme = read(&repo_root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines, more than {README_MAX_LINES}: the reference belongs in docs/"
    );
}

#[test]
fn the_readme_and_the_docs_link_to_files_that_exist() {
    let root = repo_root();
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = read(&page);
        let folder = page.parent().unwrap();
        let name = page.strip_prefix(&root).unwrap().display().to_string();
        for (n, line) in prose(&text) {
            for target in link_targets(line) {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (file, fragment) = match target.split_once('#') {
                    Some((file, fragment)) => (file, Some(fragment)),
                    None => (target.as_str(), None),
                };
                let path = if file.is_empty() {
                    page.clone()
                } else {
                    folder.join(file)
                };
                if !path.exists() {
                    broken.push(format!("{name}:{n}: {target}: no such file"));
                    continue;
                }
                if let Some(fragment) = fragment
                    && path.extension().is_some_and(|e| e == "md")
                    && !anchors(&read(&path)).iter().any(|a| a == fragment)
                {
                    broken.push(format!("{name}:{n}: {target}: no such heading"));
                }
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} relative links found: is the parser reading the pages?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn anchors_are_made_as_github_makes_them() {
    assert_eq!(
        anchor(r#"The node API (`kind = "node-api"`)"#),
        "the-node-api-kind--node-api"
    );
    assert_eq!(anchor("`[[virtual_node]]`"), "virtual_node");
    assert_eq!(
        anchor("5. Load it in the gateway"),
        "5-load-it-in-the-gateway"
    );
    assert_eq!(
        anchor("The HTTP/1.1 fast path and hyper's path"),
        "the-http11-fast-path-and-hypers-path"
    );
    assert_eq!(
        anchors("# A\n```\n# not a heading\n```\n## A\n### A-1\n"),
        ["a", "a-1", "a-1-1"]
    );
}
