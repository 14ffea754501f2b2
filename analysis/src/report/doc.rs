//! The report as blocks, rendered once as Markdown and once as a self-contained HTML page, so that
//! both say the same thing.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One block of the report. Text may use `code`, **bold** and links to a heading or a grid row
/// (`[text](#anchor)`, the anchor a heading's [`slug`]), nothing else.
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
    /// The table of contents: every heading of level 2 and 3 after it, each a link.
    Toc,
    /// Blocks that read as one unit (a job's decision): framed in the HTML page.
    Boxed(Vec<Block>),
    /// Coloured cells in rows and columns, with a legend (the fault grid).
    Grid(Grid),
}

/// A grid of cells, each with a tone the legend explains.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// The top-left cell (what the rows are).
    pub corner: String,
    /// Column names.
    pub columns: Vec<String>,
    /// The rows.
    pub rows: Vec<GridRow>,
    /// What each tone means, in the order shown.
    pub legend: Vec<(Tone, String)>,
    /// The grid drawn as a chart (file stem, caption), for the Markdown form, which cannot colour
    /// a table; the HTML page colours its table instead.
    pub chart: Option<(String, String)>,
}

/// One row of a [`Grid`].
#[derive(Clone, Debug, PartialEq)]
pub struct GridRow {
    /// Its label.
    pub label: String,
    /// The anchor other text links to (`[x](#anchor)`); the HTML row carries it as its id.
    pub anchor: String,
    /// One cell per column.
    pub cells: Vec<GridCell>,
}

/// One cell of a [`Grid`].
#[derive(Clone, Debug, PartialEq)]
pub struct GridCell {
    /// What it says ("2/2, up to 1.05 s").
    pub text: String,
    /// How it is coloured.
    pub tone: Tone,
}

/// What a grid cell's colour says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Something went wrong (an overlap).
    Bad,
    /// It held.
    Good,
    /// Something went wrong and a defence caught all of it (the fence refused every stale write).
    Caught,
    /// Not measured or not applicable.
    Off,
}

impl Tone {
    /// The mark a Markdown table shows for it.
    pub fn mark(self) -> &'static str {
        match self {
            Tone::Bad => "🟥",
            Tone::Good => "🟩",
            Tone::Caught => "🟦",
            Tone::Off => "⬜",
        }
    }

    /// Its CSS class in the HTML page.
    fn class(self) -> &'static str {
        match self {
            Tone::Bad => "bad",
            Tone::Good => "good",
            Tone::Caught => "caught",
            Tone::Off => "off",
        }
    }
}

/// A heading's anchor, as GitHub makes it: lower case, punctuation dropped, spaces as dashes
/// (`1. Lock backend` gives `1-lock-backend`). The HTML page uses the same, so a link works in
/// both.
pub fn slug(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The headings of level 2 and 3 after the table of contents, in order.
fn contents(blocks: &[Block]) -> Vec<(u8, String)> {
    let start = blocks.iter().position(|b| *b == Block::Toc).unwrap_or(0);
    let mut out = Vec::new();
    for block in &blocks[start..] {
        match block {
            Block::Heading(level @ (2 | 3), text) => out.push((*level, text.clone())),
            Block::Boxed(inner) => {
                for b in inner {
                    if let Block::Heading(level @ (2 | 3), text) = b {
                        out.push((*level, text.clone()));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The Markdown form: charts as PNG images beside the file.
pub fn markdown(blocks: &[Block]) -> String {
    let mut out = String::new();
    let toc = contents(blocks);
    markdown_into(&mut out, blocks, &toc);
    out
}

fn markdown_into(out: &mut String, blocks: &[Block], toc: &[(u8, String)]) {
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
            Block::Table { head, rows } => markdown_table(out, head, rows),
            Block::Chart { name, caption } => {
                let _ = writeln!(
                    out,
                    "![{caption}](charts/{name}.png)\n\n*{caption}* ([SVG](charts/{name}.svg))\n"
                );
            }
            Block::Code { lang, text } => {
                let _ = writeln!(out, "```{lang}\n{}\n```\n", text.trim_end());
            }
            Block::Toc => {
                // The parts only: a Markdown page has no sidebar to fold the rest into.
                for (_, text) in toc.iter().filter(|(level, _)| *level == 2) {
                    let _ = writeln!(out, "- [{}](#{})", text.replace('`', ""), slug(text));
                }
                out.push('\n');
            }
            Block::Boxed(inner) => markdown_into(out, inner, toc),
            Block::Grid(grid) => markdown_into(out, &grid_as_blocks(grid), toc),
        }
    }
}

fn markdown_table(out: &mut String, head: &[String], rows: &[Vec<String>]) {
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

/// A grid in Markdown: a table whose cells carry their tone's mark, the legend, the chart.
fn grid_as_blocks(grid: &Grid) -> Vec<Block> {
    let head = std::iter::once(&grid.corner)
        .chain(&grid.columns)
        .cloned()
        .collect();
    let rows = grid
        .rows
        .iter()
        .map(|row| {
            std::iter::once(row.label.clone())
                .chain(
                    row.cells
                        .iter()
                        .map(|c| format!("{} {}", c.tone.mark(), c.text)),
                )
                .collect()
        })
        .collect();
    let legend: Vec<String> = grid
        .legend
        .iter()
        .map(|(tone, text)| format!("{} {text}", tone.mark()))
        .collect();
    let mut blocks = vec![Block::Table { head, rows }, Block::Para(legend.join(" · "))];
    if let Some((name, caption)) = &grid.chart {
        blocks.push(Block::Chart {
            name: name.clone(),
            caption: caption.clone(),
        });
    }
    blocks
}

/// The HTML form: one file with every chart inside it as inline SVG, its own styles, and no
/// reference to anything outside it.
pub fn html(title: &str, blocks: &[Block], charts: &BTreeMap<String, String>) -> String {
    let mut body = String::new();
    let toc = contents(blocks);
    html_into(&mut body, blocks, charts, &toc);
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        escape(title)
    )
}

fn html_into(
    body: &mut String,
    blocks: &[Block],
    charts: &BTreeMap<String, String>,
    toc: &[(u8, String)],
) {
    for block in blocks {
        match block {
            Block::Heading(level, text) => {
                let _ = writeln!(
                    body,
                    "<h{level} id=\"{}\">{}</h{level}>",
                    slug(text),
                    inline(text)
                );
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
            Block::Table { head, rows } => html_table(body, head, rows),
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
            Block::Toc => html_toc(body, toc),
            Block::Boxed(inner) => {
                body.push_str("<section class=\"decision\">\n");
                html_into(body, inner, charts, toc);
                body.push_str("</section>\n");
            }
            Block::Grid(grid) => html_grid(body, grid),
        }
    }
}

fn html_table(body: &mut String, head: &[String], rows: &[Vec<String>]) {
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

/// The contents: level-2 headings, each with its level-3 ones nested under it.
fn html_toc(body: &mut String, toc: &[(u8, String)]) {
    body.push_str("<nav class=\"toc\" aria-label=\"Contents\">\n<strong>Contents</strong>\n<ul>\n");
    let link = |text: &str| format!("<a href=\"#{}\">{}</a>", slug(text), inline(text));
    let mut i = 0;
    while i < toc.len() {
        let (level, text) = &toc[i];
        let _ = write!(body, "<li>{}", link(text));
        i += 1;
        if *level == 2 && toc.get(i).is_some_and(|(l, _)| *l == 3) {
            body.push_str("\n<ul>\n");
            while let Some((3, child)) = toc.get(i) {
                let _ = writeln!(body, "<li>{}</li>", link(child));
                i += 1;
            }
            body.push_str("</ul>\n");
        }
        body.push_str("</li>\n");
    }
    body.push_str("</ul>\n</nav>\n");
}

/// A grid: a table whose cells are coloured by their tone, each row an anchor, then its legend.
fn html_grid(body: &mut String, grid: &Grid) {
    let _ = write!(
        body,
        "<table class=\"grid\">\n<thead><tr><th>{}</th>",
        inline(&grid.corner)
    );
    for c in &grid.columns {
        let _ = write!(body, "<th>{}</th>", inline(c));
    }
    body.push_str("</tr></thead>\n<tbody>\n");
    for row in &grid.rows {
        let _ = write!(
            body,
            "<tr id=\"{}\"><th>{}</th>",
            escape(&row.anchor),
            inline(&row.label)
        );
        for c in &row.cells {
            let _ = write!(
                body,
                "<td class=\"{}\">{}</td>",
                c.tone.class(),
                inline(&c.text)
            );
        }
        body.push_str("</tr>\n");
    }
    body.push_str("</tbody>\n</table>\n<p class=\"legend\">");
    for (tone, text) in &grid.legend {
        let _ = write!(
            body,
            "<span class=\"swatch {}\"></span>{} ",
            tone.class(),
            inline(text)
        );
    }
    body.push_str("</p>\n");
}

const STYLE: &str = "body { font-family: sans-serif; max-width: 72rem; margin: 2rem auto; padding: 0 1rem; color: #222; line-height: 1.45; }
a { color: #0550ae; }
nav.toc { border: 1px solid #ddd; background: #fafafa; padding: 0.5rem 1rem; margin: 1rem 0; font-size: 0.95rem; }
nav.toc ul { margin: 0.25rem 0; padding-left: 1.2rem; }
nav.toc > ul { columns: 2; column-gap: 2rem; }
nav.toc > ul > li { break-inside: avoid; }
section.decision { border: 2px solid #0550ae; border-radius: 6px; padding: 0.25rem 1.25rem 0.5rem; margin: 1.5rem 0; background: #f5f9ff; }
section.decision h2 { margin-top: 0.75rem; }
table.grid td { text-align: center; white-space: nowrap; }
table.grid th { text-align: left; white-space: nowrap; }
td.bad, .swatch.bad { background: #f8c9c4; }
td.good, .swatch.good { background: #cdeccd; }
td.caught, .swatch.caught { background: #c9dcf5; }
td.off, .swatch.off { background: #f2f2f2; color: #888; }
.swatch { display: inline-block; width: 0.9rem; height: 0.9rem; border: 1px solid #aaa; margin: 0 0.3rem 0 0.8rem; vertical-align: middle; }
p.legend { font-size: 0.9rem; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; text-align: left; }
th { background: #f2f2f2; }
td code { white-space: nowrap; }
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

/// `code`, **bold** and `[text](#anchor)` links in escaped text.
fn inline(text: &str) -> String {
    links(&emphasis(&escape(text)))
}

/// `[text](#anchor)` as a link, in text already escaped.
fn links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(mid) = rest[open..].find("](#").map(|m| open + m) else {
            break;
        };
        let Some(close) = rest[mid..].find(')').map(|c| mid + c) else {
            break;
        };
        out.push_str(&rest[..open]);
        let _ = write!(
            out,
            "<a href=\"#{}\">{}</a>",
            &rest[mid + 3..close],
            &rest[open + 1..mid]
        );
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// `code` and **bold** in escaped text.
fn emphasis(escaped: &str) -> String {
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
