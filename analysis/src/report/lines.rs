//! A line chart against contention: one line per backend and wait mode, the contention level on
//! a logarithmic axis (1, 2, 4 ... 64), the value on a linear or logarithmic one; a line may be
//! dashed (a P99 beside its P50). The legend has a column of its own to the right of the plot, so
//! that with a dozen lines it hides none of them.

use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::prelude::*;

use super::charts::{Chart, FONT, colour, err, tick};

/// One line: its legend entry, its points (contenders, value), its colour index, dashed or not.
#[derive(Clone, Debug)]
pub struct Line {
    /// Legend entry.
    pub label: String,
    /// (contenders, value) points, in order of contenders.
    pub points: Vec<(f64, f64)>,
    /// Colour index (a backend's lines share one).
    pub colour: usize,
    /// Dashed (a tail percentile).
    pub dashed: bool,
}

/// The chart.
pub struct ContentionLines {
    /// Chart title.
    pub title: String,
    /// Value axis label.
    pub y_label: String,
    /// Logarithmic value axis.
    pub log_y: bool,
    /// What the values count.
    pub unit: crate::report::charts::Unit,
    /// The lines.
    pub lines: Vec<Line>,
}

impl Chart for ContentionLines {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let xs = self.lines.iter().flat_map(|l| l.points.iter().map(|p| p.0));
        let x_max = xs.fold(2.0f64, f64::max) * 1.3;
        let ys = self
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .filter(|v| v.is_finite() && *v > 0.0);
        let (lo, hi) = ys.fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
        let hi = if hi > 0.0 { hi } else { 1.0 };
        let (width, _) = root.dim_in_pixel();
        let (plot, legend) = root.split_horizontally(width as i32 - LEGEND_WIDTH);
        self.draw_legend(&legend)?;
        let mut builder = ChartBuilder::on(&plot);
        builder
            .caption(&self.title, (FONT, 22))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(72);
        let x_range = (0.8..x_max).log_scale();
        if self.log_y {
            let lo = if lo.is_finite() {
                lo / 1.5
            } else {
                hi / 1000.0
            };
            let top = hi * 1.5;
            let ticks = log_ticks(lo, top);
            let mut chart = builder
                .build_cartesian_2d(x_range, (lo..top).log_scale().with_key_points(ticks))
                .map_err(err)?;
            self.draw_on(&mut chart)
        } else {
            let mut chart = builder
                .build_cartesian_2d(x_range, 0.0..hi * 1.15)
                .map_err(err)?;
            self.draw_on(&mut chart)
        }
    }
}

/// Ticks of a log axis from `lo` to `hi` at 1, 2 and 5 times each power of ten (1 and 3 when
/// the axis spans more than three decades), so that every decade it crosses is labelled.
pub(crate) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo) {
        return Vec::new();
    }
    let steps: &[f64] = if hi / lo > 1e3 {
        &[1.0, 3.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    let mut ticks = Vec::new();
    let mut decade = 10f64.powf(lo.log10().floor());
    while decade <= hi {
        for m in steps {
            let t = decade * m;
            if t >= lo && t <= hi {
                ticks.push(t);
            }
        }
        decade *= 10.0;
    }
    ticks
}

/// Pixels kept right of the plot for the legend.
const LEGEND_WIDTH: i32 = 230;

impl ContentionLines {
    /// One entry per line, top down: a sample of its stroke (dashed or solid), then its label.
    fn draw_legend<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let top = 60;
        let step = 19;
        for (i, line) in self.lines.iter().enumerate() {
            let y = top + step * i as i32;
            let style = colour(line.colour).stroke_width(2);
            let segments: &[(i32, i32)] = if line.dashed {
                &[(4, 11), (16, 23), (28, 34)]
            } else {
                &[(4, 34)]
            };
            for &(from, to) in segments {
                area.draw(&PathElement::new(vec![(from, y), (to, y)], style))
                    .map_err(err)?;
            }
            area.draw(&Text::new(
                line.label.clone(),
                (42, y - 7),
                (FONT, 13).into_font().color(&BLACK),
            ))
            .map_err(err)?;
        }
        Ok(())
    }

    fn draw_on<'a, DB, X, Y>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    ) -> Result<(), String>
    where
        DB: DrawingBackend + 'a,
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        chart
            .configure_mesh()
            .light_line_style(TRANSPARENT)
            .x_label_formatter(&tick)
            .y_label_formatter(&|v| self.unit.tick(v))
            .x_desc("contenders")
            .y_desc(&self.y_label)
            .label_style((FONT, 14))
            .draw()
            .map_err(err)?;
        for line in &self.lines {
            // A zero (no grant at that level) has no place on a logarithmic axis: left out.
            let points: Vec<(f64, f64)> = line
                .points
                .iter()
                .copied()
                .filter(|p| !self.log_y || p.1 > 0.0)
                .collect();
            let style = colour(line.colour).stroke_width(2);
            if line.dashed {
                chart
                    .draw_series(DashedLineSeries::new(points.iter().copied(), 8, 5, style))
                    .map_err(err)?;
            } else {
                chart
                    .draw_series(LineSeries::new(points.iter().copied(), style))
                    .map_err(err)?;
            }
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|p| Circle::new(*p, 3, colour(line.colour).filled())),
                )
                .map_err(err)?;
        }
        Ok(())
    }
}
