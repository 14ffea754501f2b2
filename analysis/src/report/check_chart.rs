//! The model check in one picture: on the left the observed runs over the simulated P50, P99 and
//! P99.9 against volume, on the right a QQ plot of where the runs fall in the simulated
//! distribution (their PIT values) against where a right model puts them, with the band inside
//! which the KS test (at 1 %) does not reject.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::charts::{Chart, FONT, TTL_COLOUR, colour, err, legend, line, tick};

/// One observed run.
#[derive(Clone, Copy, Debug)]
pub struct RunPoint {
    /// Volume.
    pub volume: f64,
    /// Duration, seconds.
    pub seconds: f64,
    /// Beyond the simulated P99.9 (2), P99 (1) or neither (0).
    pub beyond: u8,
}

/// Simulated (volume, P50, P99, P99.9 seconds) at each volume of one profile, by volume.
pub type Band = Vec<(f64, f64, f64, f64)>;

/// The chart.
pub struct ModelCheckChart {
    /// Chart title.
    pub title: String,
    /// Unit of volume.
    pub unit: String,
    /// Simulated (volume, P50, P99, P99.9 seconds) per profile, by volume.
    pub bands: Vec<(String, Band)>,
    /// The runs.
    pub runs: Vec<RunPoint>,
    /// Their PIT values.
    pub pits: Vec<f64>,
}

impl Chart for ModelCheckChart {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let titled = root.titled(&self.title, (FONT, 22)).map_err(err)?;
        let (left, right) = titled.split_horizontally(titled.dim_in_pixel().0 * 3 / 5);
        self.draw_band(&left)?;
        self.draw_qq(&right)
    }
}

impl ModelCheckChart {
    /// The band chart's axes: volumes with a margin each side, runtimes from just under the
    /// lowest to just over the highest, observed or simulated.
    fn band_ranges(&self) -> ((f64, f64), (f64, f64)) {
        let volumes = self
            .runs
            .iter()
            .map(|r| r.volume)
            .chain(self.bands.iter().flat_map(|(_, b)| b.iter().map(|p| p.0)));
        let (lo, hi) = volumes.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        let span = (hi - lo).max(hi * 0.1).max(1.0);
        let top = self
            .runs
            .iter()
            .map(|r| r.seconds)
            .chain(self.bands.iter().flat_map(|(_, b)| b.iter().map(|p| p.3)))
            .fold(1e-3f64, f64::max)
            * 1.1;
        let bottom = self
            .runs
            .iter()
            .map(|r| r.seconds)
            .chain(self.bands.iter().flat_map(|(_, b)| b.iter().map(|p| p.1)))
            .fold(f64::INFINITY, f64::min)
            .min(top)
            * 0.9;
        (
            ((lo - span * 0.08).max(0.0), hi + span * 0.08),
            (bottom, top),
        )
    }

    fn draw_band<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let ((x0, x1), (bottom, top)) = self.band_ranges();
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x0..x1, bottom..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_label_formatter(&tick)
            .y_label_formatter(&tick)
            .x_desc(&self.unit)
            .y_desc("job runtime (s)")
            .label_style((FONT, 13))
            .draw()
            .map_err(err)?;
        for (i, (profile, band)) in self.bands.iter().enumerate() {
            let c = colour(i);
            let prefix = if self.bands.len() > 1 {
                format!("{profile} ")
            } else {
                String::new()
            };
            for (label, pick, dash) in [("P50", 1usize, 0i32), ("P99", 2, 8), ("P99.9", 3, 3)] {
                let points: Vec<(f64, f64)> = band
                    .iter()
                    .map(|p| (p.0, [p.0, p.1, p.2, p.3][pick]))
                    .collect();
                let style = c.stroke_width(2);
                let label = format!("{prefix}simulated {label}");
                if dash == 0 {
                    line(&mut chart, points, style, label)?;
                    continue;
                }
                let gap = 4;
                chart
                    .draw_series(DashedLineSeries::new(
                        points,
                        dash as u32,
                        gap as u32,
                        style,
                    ))
                    .map_err(err)?
                    .label(label)
                    .legend(move |(x, y)| {
                        EmptyElement::at((x, y))
                            + PathElement::new(vec![(0, 0), (dash, 0)], style)
                            + PathElement::new(vec![(dash + gap, 0), (2 * dash + gap, 0)], style)
                    });
            }
        }
        for (beyond, label, c) in [
            (0u8, "observed run", BLACK.mix(0.45)),
            (
                1,
                "beyond the simulated P99",
                RGBColor(255, 127, 14).mix(0.9),
            ),
            (2, "beyond the simulated P99.9", TTL_COLOUR.mix(1.0)),
        ] {
            let points: Vec<(f64, f64)> = self
                .runs
                .iter()
                .filter(|r| r.beyond == beyond)
                .map(|r| (r.volume, r.seconds))
                .collect();
            if points.is_empty() && beyond > 0 {
                continue;
            }
            let size = if beyond == 0 { 2 } else { 4 };
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(move |p| Circle::new(p, size, c.filled())),
                )
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| Circle::new((x + 9, y), 4, c.filled()));
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }

    fn draw_qq<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let mut sorted = self.pits.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len().max(1) as f64;
        let mut chart = ChartBuilder::on(area)
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(48)
            .build_cartesian_2d(0.0..1.0, 0.0..1.0)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("where a right model puts the run")
            .y_desc("where it fell (PIT)")
            .label_style((FONT, 13))
            .draw()
            .map_err(err)?;
        // The band around the diagonal inside which the KS test at 1 % does not reject.
        let d = 1.63 / n.sqrt();
        let band = BLUE.mix(0.12);
        chart
            .draw_series(std::iter::once(Polygon::new(
                vec![
                    (0.0, 0.0),
                    (0.0, d),
                    (1.0 - d, 1.0),
                    (1.0, 1.0),
                    (1.0, 1.0 - d),
                    (d, 0.0),
                ],
                band.filled(),
            )))
            .map_err(err)?
            .label("KS test accepts (1 %)")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 18, y + 5)], band.filled()));
        line(
            &mut chart,
            vec![(0.0, 0.0), (1.0, 1.0)],
            BLACK.mix(0.5).stroke_width(1),
            "right model".into(),
        )?;
        let c = colour(0);
        chart
            .draw_series(
                sorted
                    .iter()
                    .enumerate()
                    .map(|(i, u)| Circle::new(((i as f64 + 0.5) / n, *u), 2, c.filled())),
            )
            .map_err(err)?
            .label("observed runs")
            .legend(move |(x, y)| Circle::new((x + 9, y), 4, c.filled()));
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    }
}
