//! The report as blocks, rendered once as Markdown and once as a self-contained HTML page, so that
//! both say the same thing.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One block of the report. Text may use `code` and **bold**, nothing else.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// A heading of level 1 to 3.
    Heading(u8, String),
    /// A paragraph.
    Para(String),
    /// A bulleted list.
    List(Vec<String>),
    /// A table with a header row.
    Table {
        /// Column names.
        head: Vec<String>,
        /// Rows, each as long as `head`.
        rows: Vec<Vec<String>>,
    },
    /// A chart: `charts/NAME.png` and `charts/NAME.svg`.
    Chart {
        /// File stem.
        name: String,
        /// What it shows.
        caption: String,
    },
    /// A fenced block of code or configuration.
    Code {
        /// Language tag (`yaml`).
        lang: String,
        /// The text.
        text: String,
    },
}

/// The Markdown form: charts as PNG images beside the file.
pub fn markdown(blocks: &[Block]) -> String {
    let mut out = String::new();
    for block in blocks {
        match block {
            Block::Heading(level, text) => {
                let _ = writeln!(out, "{} {text}\n", "#".repeat(usize::from(*level)));
            }
            Block::Para(text) => {
                let _ = writeln!(out, "{text}\n");
            }
            Block::List(items) => {
                for item in items {
                    let _ = writeln!(out, "- {item}");
                }
                out.push('\n');
            }
            Block::Table { head, rows } => {
                let cell = |c: &String| c.replace('|', "\\|");
                let _ = writeln!(
                    out,
                    "| {} |",
                    head.iter().map(cell).collect::<Vec<_>>().join(" | ")
                );
                let _ = writeln!(out, "|{}", "---|".repeat(head.len()));
                for row in rows {
                    let _ = writeln!(
                        out,
                        "| {} |",
                        row.iter().map(cell).collect::<Vec<_>>().join(" | ")
                    );
                }
                out.push('\n');
            }
            Block::Chart { name, caption } => {
                let _ = writeln!(
                    out,
                    "![{caption}](charts/{name}.png)\n\n*{caption}* ([SVG](charts/{name}.svg))\n"
                );
            }
            Block::Code { lang, text } => {
                let _ = writeln!(out, "```{lang}\n{}\n```\n", text.trim_end());
            }
        }
    }
    out
}

/// The HTML form: one file with every chart inside it as inline SVG, its own styles, and no
/// reference to anything outside it.
pub fn html(title: &str, blocks: &[Block], charts: &BTreeMap<String, String>) -> String {
    let mut body = String::new();
    for block in blocks {
        match block {
            Block::Heading(level, text) => {
                let _ = writeln!(body, "<h{level}>{}</h{level}>", inline(text));
            }
            Block::Para(text) => {
                let _ = writeln!(body, "<p>{}</p>", inline(text));
            }
            Block::List(items) => {
                body.push_str("<ul>\n");
                for item in items {
                    let _ = writeln!(body, "<li>{}</li>", inline(item));
                }
                body.push_str("</ul>\n");
            }
            Block::Table { head, rows } => {
                body.push_str("<table>\n<thead><tr>");
                for h in head {
                    let _ = write!(body, "<th>{}</th>", inline(h));
                }
                body.push_str("</tr></thead>\n<tbody>\n");
                for row in rows {
                    body.push_str("<tr>");
                    for c in row {
                        let _ = write!(body, "<td>{}</td>", inline(c));
                    }
                    body.push_str("</tr>\n");
                }
                body.push_str("</tbody>\n</table>\n");
            }
            Block::Chart { name, caption } => {
                let svg = charts
                    .get(name)
                    .map_or("", |svg| strip_xml_declaration(svg));
                let _ = writeln!(
                    body,
                    "<figure role=\"img\" aria-label=\"{}\">{svg}<figcaption>{}</figcaption></figure>",
                    escape(caption),
                    inline(caption)
                );
            }
            Block::Code { text, .. } => {
                let _ = writeln!(body, "<pre><code>{}</code></pre>", escape(text.trim_end()));
            }
        }
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        escape(title)
    )
}

const STYLE: &str = "body { font-family: sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; line-height: 1.45; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; }
th { background: #f2f2f2; }
code, pre { font-family: monospace; background: #f6f6f6; }
pre { padding: 0.75rem; overflow-x: auto; }
figure { margin: 1.5rem 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: 0.9rem; color: #555; }
";

/// An SVG document as an element to inline: without an XML declaration, if it has one.
fn strip_xml_declaration(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `code` and **bold** in escaped text.
fn inline(text: &str) -> String {
    let escaped = escape(text);
    let mut out = String::new();
    for (i, part) in escaped.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{part}</code>");
        } else {
            for (j, piece) in part.split("**").enumerate() {
                if j % 2 == 1 {
                    let _ = write!(out, "<strong>{piece}</strong>");
                } else {
                    out.push_str(piece);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_and_html_say_the_same() {
        let blocks = vec![
            Block::Heading(1, "Title".into()),
            Block::Para("TTL is **900 s**, set by `ttl`.".into()),
            Block::Table {
                head: vec!["a".into(), "b|c".into()],
                rows: vec![vec!["1".into(), "<2>".into()]],
            },
            Block::Chart {
                name: "x".into(),
                caption: "X".into(),
            },
        ];
        let md = markdown(&blocks);
        assert!(md.contains("# Title\n"));
        assert!(md.contains("| a | b\\|c |"));
        assert!(md.contains("![X](charts/x.png)"));
        let mut charts = BTreeMap::new();
        charts.insert("x".to_string(), "<svg width=\"1\"></svg>".to_string());
        let page = html("T", &blocks, &charts);
        assert!(page.contains("<strong>900 s</strong>"));
        assert!(page.contains("<code>ttl</code>"));
        assert!(page.contains("&lt;2&gt;"));
        assert!(page.contains("<figure role=\"img\" aria-label=\"X\"><svg width=\"1\"></svg>"));
    }
}
