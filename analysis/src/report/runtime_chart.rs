//! A job's runtime by percentile as small multiples: today's volume in one panel, with today's
//! TTL, and the target and growth scales in another, with the recommended TTL and its alert line.
//! On one axis the 1x curves of a job simulated at 20x would be a line along the bottom edge.
//! Each panel's time axis ticks at round values and ends where its data and lines end; its
//! percentile axis ends where the replays do (P99.9 from 2,000 of them, not P99.99); its key sits
//! below it, so that it covers no curve.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::charts::{
    Chart, Curve, FONT, HEIGHT, RefLine, TimeAxis, WIDTH, colour, err, nines_label,
};

/// One panel: its title, its curves and its horizontal lines.
pub struct RuntimePanel {
    /// "today's volume (1x)".
    pub title: String,
    /// (label, (nines, seconds)) curves.
    pub curves: Vec<Curve>,
    /// Horizontal lines: today's TTL, or the TTL and the alert.
    pub lines: Vec<RefLine>,
}

/// The chart: a title over panels side by side.
pub struct RuntimePanels {
    /// Chart title.
    pub title: String,
    /// The panels, left to right.
    pub panels: Vec<RuntimePanel>,
}

/// Height of one row of a panel's key, pixels.
const KEY_ROW: u32 = 19;
/// Entries in a row of a panel's key.
const KEY_COLUMNS: usize = 2;

impl RuntimePanels {
    fn key_rows(&self) -> u32 {
        self.panels
            .iter()
            .map(|p| (p.curves.len() + p.lines.len()).div_ceil(KEY_COLUMNS) as u32)
            .max()
            .unwrap_or(0)
    }
}

impl Chart for RuntimePanels {
    fn size(&self) -> (u32, u32) {
        (WIDTH, HEIGHT + self.key_rows() * KEY_ROW)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (_, height) = root.dim_in_pixel();
        let titled = root.titled(&self.title, (FONT, 22)).map_err(err)?;
        let key_height = (self.key_rows() * KEY_ROW + 12) as i32;
        let n = self.panels.len().max(1);
        for (panel, area) in self.panels.iter().zip(titled.split_evenly((1, n))) {
            let (plot, key) = area.split_vertically(height as i32 - 40 - key_height);
            panel.draw_plot(&plot)?;
            panel.draw_key(&key)?;
        }
        Ok(())
    }
}

impl RuntimePanel {
    fn draw_plot<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        // The percentile axis ends where the curves do.
        let x_max = self
            .curves
            .iter()
            .flat_map(|(_, p)| p.iter().map(|(x, _)| *x))
            .fold(1.0f64, f64::max);
        let highest = self
            .curves
            .iter()
            .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
            .chain(self.lines.iter().map(|(_, v, _)| *v))
            .filter(|v| v.is_finite())
            .fold(0.0f64, f64::max);
        let y = TimeAxis::covering(highest * 1.05);
        let mut chart = ChartBuilder::on(area)
            .caption(&self.title, (FONT, 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..x_max, y)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_labels(x_max.floor() as usize + 1)
            .x_label_formatter(&nines_label)
            .x_desc("percentile")
            .y_desc("runtime")
            .label_style((FONT, 13))
            .draw()
            .map_err(err)?;
        for (label, value, c) in &self.lines {
            let _ = label;
            chart
                .draw_series(LineSeries::new(
                    vec![(0.0, *value), (x_max, *value)],
                    c.stroke_width(2),
                ))
                .map_err(err)?;
        }
        for (i, (_, points)) in self.curves.iter().enumerate() {
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    colour(i).stroke_width(2),
                ))
                .map_err(err)?;
        }
        Ok(())
    }

    /// The key: a swatch and a label per curve, then per line, in rows of [`KEY_COLUMNS`].
    fn draw_key<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let (width, _) = area.dim_in_pixel();
        let column = (width as i32 - 24) / KEY_COLUMNS as i32;
        let entries = self
            .curves
            .iter()
            .enumerate()
            .map(|(i, (label, _))| (label.clone(), colour(i)))
            .chain(self.lines.iter().map(|(label, _, c)| (label.clone(), *c)));
        for (k, (label, c)) in entries.enumerate() {
            let x = 24 + (k % KEY_COLUMNS) as i32 * column;
            let y = 8 + (k / KEY_COLUMNS) as i32 * KEY_ROW as i32;
            area.draw(&PathElement::new(
                vec![(x, y + 7), (x + 22, y + 7)],
                c.stroke_width(3),
            ))
            .map_err(err)?;
            area.draw(&Text::new(
                label,
                (x + 28, y),
                (FONT, 13).into_font().color(&BLACK),
            ))
            .map_err(err)?;
        }
        Ok(())
    }
}
