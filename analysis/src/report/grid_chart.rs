//! The fault grid as a picture, for the Markdown record (the HTML page draws it as a table):
//! a row per scenario/variant, a column per backend, each cell coloured by its outcome.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::charts::{Chart, FONT, WIDTH, err};
use super::doc::{Grid, Tone};

/// Pixels per row.
const ROW: i32 = 24;
/// Pixels above the first row: the title and the column names.
const HEAD: i32 = 84;
/// Pixels below the last row: the legend.
const FOOT: i32 = 40;
/// Pixels of the label column.
const LABEL: i32 = 230;

/// The grid, drawn.
pub struct FaultGridChart {
    /// Its title.
    pub title: String,
    /// What it draws.
    pub grid: Grid,
}

impl FaultGridChart {
    /// Its height in pixels: every row shows, at any count.
    pub fn height(&self) -> u32 {
        (HEAD + FOOT + ROW * self.grid.rows.len() as i32) as u32
    }
}

fn fill(tone: Tone) -> RGBColor {
    match tone {
        Tone::Bad => RGBColor(240, 140, 128),
        Tone::Good => RGBColor(132, 204, 132),
        Tone::Caught => RGBColor(128, 170, 232),
        Tone::Off => RGBColor(236, 236, 236),
    }
}

impl Chart for FaultGridChart {
    fn size(&self) -> (u32, u32) {
        (WIDTH, self.height())
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let text = |s: &str, x: i32, y: i32, size: u32| {
            Text::new(
                s.to_string(),
                (x, y),
                (FONT, size).into_font().color(&BLACK),
            )
        };
        root.draw(&text(&self.title, 12, 8, 20)).map_err(err)?;
        let columns = self.grid.columns.len().max(1) as i32;
        let width = (WIDTH as i32 - LABEL - 12) / columns;
        for (c, name) in self.grid.columns.iter().enumerate() {
            let x = LABEL + c as i32 * width + 6;
            // A column named with what it was measured at ("`etcd` (TTL 2.00 s)") takes two
            // lines, so that neighbours do not run into each other.
            let name = name.replace('`', "");
            let (first, second) = name.split_once(" (").unwrap_or((&name, ""));
            let top = if second.is_empty() {
                HEAD - 22
            } else {
                HEAD - 38
            };
            root.draw(&text(first, x, top, 14)).map_err(err)?;
            if !second.is_empty() {
                root.draw(&text(&format!("({second}"), x, top + 17, 12))
                    .map_err(err)?;
            }
        }
        for (r, row) in self.grid.rows.iter().enumerate() {
            let y = HEAD + r as i32 * ROW;
            root.draw(&text(&row.label.replace('`', ""), 12, y + 5, 13))
                .map_err(err)?;
            for (c, cell) in row.cells.iter().enumerate() {
                let x = LABEL + c as i32 * width;
                root.draw(&Rectangle::new(
                    [(x + 1, y + 1), (x + width - 1, y + ROW - 1)],
                    fill(cell.tone).filled(),
                ))
                .map_err(err)?;
                root.draw(&text(&cell.text, x + 6, y + 5, 12))
                    .map_err(err)?;
            }
        }
        let mut x = 12;
        let y = HEAD + ROW * self.grid.rows.len() as i32 + 14;
        for (tone, label) in &self.grid.legend {
            root.draw(&Rectangle::new(
                [(x, y), (x + 14, y + 14)],
                fill(*tone).filled(),
            ))
            .map_err(err)?;
            root.draw(&Rectangle::new(
                [(x, y), (x + 14, y + 14)],
                BLACK.stroke_width(1),
            ))
            .map_err(err)?;
            root.draw(&text(label, x + 20, y, 13)).map_err(err)?;
            x += 28 + label.chars().count() as i32 * 7;
        }
        Ok(())
    }
}
