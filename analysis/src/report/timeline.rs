//! The fault lab's timeline: one trial per backend of a variant, two lanes each (holder and
//! contender). Bars are the intervals each believed it held the lock, the fault window is shaded,
//! and every write is a mark: accepted, refused by the fence, or stale and accepted.

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::charts::{Chart, FONT, colour, err, tick};

/// One write on a lane.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mark {
    /// Accepted, and the writer held the lock.
    Accepted,
    /// Written after the lock had passed on, and accepted (the harm).
    StaleAccepted,
    /// Refused by the fence.
    Refused,
}

/// One worker's lane.
#[derive(Clone, Debug)]
pub struct Lane {
    /// What the lane is ("redis holder, token 7").
    pub label: String,
    /// When it believed it held the lock (seconds from the holder's grant); `None`: never.
    pub held: Option<(f64, f64)>,
    /// Its writes.
    pub writes: Vec<(f64, Mark)>,
}

/// One trial: the fault window and a lane per worker (holder and contender; a pool leak's two
/// jobs and its contender).
#[derive(Clone, Debug)]
pub struct TrialLanes {
    /// The fault's start and end.
    pub fault: (f64, f64),
    /// The workers, in the order they were granted the lock.
    pub lanes: Vec<Lane>,
}

/// The chart.
pub struct FaultTimeline {
    /// Chart title.
    pub title: String,
    /// One trial per backend.
    pub trials: Vec<TrialLanes>,
}

const FAULT: RGBColor = RGBColor(214, 39, 40);
const STALE: RGBColor = RGBColor(255, 127, 14);

impl Chart for FaultTimeline {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let lanes = self.trials.iter().map(|t| t.lanes.len()).sum::<usize>() as f64;
        let x_max = self
            .trials
            .iter()
            .flat_map(|t| {
                t.lanes
                    .iter()
                    .flat_map(|l| l.held.map(|h| h.1))
                    .chain([t.fault.1])
            })
            .fold(1.0f64, f64::max)
            * 1.04;
        let mut chart = ChartBuilder::on(root)
            .caption(&self.title, (FONT, 22))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(16)
            .build_cartesian_2d(0.0..x_max, 0.0..lanes + 0.6)
            .map_err(err)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .light_line_style(TRANSPARENT)
            .y_labels(0)
            .x_label_formatter(&tick)
            .x_desc("seconds from the holder's grant")
            .label_style((FONT, 14))
            .draw()
            .map_err(err)?;
        // Lanes from the top: the first trial's holder highest.
        let lane_y = |i: usize| lanes - i as f64 - 0.5;
        let mut first = 0;
        for trial in &self.trials {
            let count = trial.lanes.len();
            let top = lane_y(first) + 0.5;
            let bottom = lane_y(first + count - 1) - 0.5;
            chart
                .draw_series([Rectangle::new(
                    [(trial.fault.0, bottom), (trial.fault.1, top)],
                    FAULT.mix(0.12).filled(),
                )])
                .map_err(err)?;
            for (k, lane) in trial.lanes.iter().enumerate() {
                let y = lane_y(first + k);
                let fill = colour(k.min(1) + k.saturating_sub(1) * 2)
                    .mix(0.55)
                    .filled();
                if let Some((from, to)) = lane.held {
                    chart
                        .draw_series([Rectangle::new(
                            [(from, y - 0.22), (to.max(from + x_max * 0.002), y + 0.18)],
                            fill,
                        )])
                        .map_err(err)?;
                }
                chart
                    .draw_series([Text::new(
                        lane.label.clone(),
                        (x_max * 0.005, y + 0.42),
                        (FONT, 13).into_font().color(&BLACK),
                    )])
                    .map_err(err)?;
                for &(at, mark) in &lane.writes {
                    let shape: DynElement<DB, (f64, f64)> = match mark {
                        Mark::Accepted => Circle::new((at, y - 0.02), 2, BLACK.filled()).into_dyn(),
                        Mark::StaleAccepted => {
                            Circle::new((at, y - 0.02), 6, STALE.filled()).into_dyn()
                        }
                        Mark::Refused => {
                            Cross::new((at, y - 0.02), 6, FAULT.stroke_width(3)).into_dyn()
                        }
                    };
                    chart.draw_series([shape]).map_err(err)?;
                }
            }
            first += count;
        }
        draw_legend(chart.plotting_area(), x_max, lanes)
    }
}

/// The legend, by hand (the marks are not series), across the top of the plotting area whose x
/// axis ends at `x_max` and whose lanes end at `lanes`.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    x_max: f64,
    lanes: f64,
) -> Result<(), String> {
    let legend = [
        ("fault", 0),
        ("held the lock, as it believed (holder / contender)", 1),
        ("write", 2),
        ("stale write accepted", 3),
        ("refused by the fence", 4),
    ];
    // Data units per pixel across, to space the entries by their labels' widths.
    let per_px = x_max / f64::from(area.dim_in_pixel().0.max(1));
    let mut x = x_max * 0.01;
    let y = lanes + 0.3;
    for (label, kind) in legend {
        let swatch = [(x, y - 0.1), (x + 14.0 * per_px, y + 0.1)];
        let element: DynElement<DB, (f64, f64)> = match kind {
            0 => Rectangle::new(swatch, FAULT.mix(0.25).filled()).into_dyn(),
            1 => Rectangle::new(swatch, colour(0).mix(0.55).filled()).into_dyn(),
            2 => Circle::new((x + 7.0 * per_px, y), 3, BLACK.filled()).into_dyn(),
            3 => Circle::new((x + 7.0 * per_px, y), 6, STALE.filled()).into_dyn(),
            _ => Cross::new((x + 7.0 * per_px, y), 6, FAULT.stroke_width(3)).into_dyn(),
        };
        area.draw(&element).map_err(err)?;
        area.draw(&Text::new(
            label.to_string(),
            (x + 20.0 * per_px, y + 0.12),
            (FONT, 13).into_font().color(&BLACK),
        ))
        .map_err(err)?;
        x += (label.chars().count() as f64 * 6.6 + 36.0) * per_px;
    }
    Ok(())
}
