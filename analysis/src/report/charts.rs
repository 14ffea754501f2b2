//! The report's charts, each drawn once as PNG and once as SVG with plotters. Text is drawn with
//! an embedded DejaVu Sans (ab_glyph), so charts render on a server with no fonts installed.

use std::sync::Once;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::prelude::*;

/// Pixels.
pub const WIDTH: u32 = 960;
/// Pixels.
pub const HEIGHT: u32 = 540;
pub(crate) const FONT: &str = "sans-serif";
static FONT_BYTES: &[u8] = include_bytes!("../../fonts/DejaVuSans.ttf");

/// Colours of the series, in order; reference lines are red (TTL) and orange (alert).
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(227, 119, 194),
];
/// The TTL line.
pub const TTL_COLOUR: RGBColor = RGBColor(214, 39, 40);
/// The alert line.
pub const ALERT_COLOUR: RGBColor = RGBColor(255, 127, 14);
/// Today's TTL: black, apart from the derived TTL's red.
pub const TODAY_COLOUR: RGBColor = RGBColor(40, 40, 40);

pub(crate) fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font compiled into the binary; registration of the same
        // name twice only replaces it.
        let _ = plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES);
    });
}

/// A chart that can draw itself on any backend.
pub trait Chart {
    /// Its size in pixels (most charts are [`WIDTH`] x [`HEIGHT`]).
    fn size(&self) -> (u32, u32) {
        (WIDTH, HEIGHT)
    }

    /// Draws on `root`, already filled white.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String>;
}

/// One chart in both formats.
#[derive(Clone, Debug)]
pub struct Rendered {
    /// PNG bytes.
    pub png: Vec<u8>,
    /// SVG text.
    pub svg: String,
}

pub(crate) fn err(e: impl std::fmt::Debug) -> String {
    format!("drawing a chart: {e:?}")
}

/// Draws `chart` as PNG and SVG.
pub fn render(chart: &impl Chart) -> Result<Rendered, String> {
    register_font();
    let (width, height) = chart.size();
    let mut pixels = vec![0u8; (width * height * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        chart.draw(&root)?;
        root.present().map_err(err)?;
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        chart.draw(&root)?;
        root.present().map_err(err)?;
    }
    Ok(Rendered {
        png: encode_png(&pixels, width, height)?,
        svg,
    })
}

fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::Best);
    encoder.set_filter(png::FilterType::Paeth);
    let mut writer = encoder
        .write_header()
        .map_err(|e| format!("encoding a PNG: {e}"))?;
    writer
        .write_image_data(rgb)
        .map_err(|e| format!("encoding a PNG: {e}"))?;
    writer
        .finish()
        .map_err(|e| format!("encoding a PNG: {e}"))?;
    Ok(bytes)
}

/// The percentile axis of HdrHistogram plots: x = -log10(1 - q), so 90 %, 99 %, 99.9 % are evenly
/// spaced.
pub fn nines(q: f64) -> f64 {
    -(1.0 - q).max(1e-12).log10()
}

pub(crate) fn nines_label(x: &f64) -> String {
    match x.round() as i64 {
        _ if (x - x.round()).abs() > 1e-9 => String::new(),
        0 => "P0".to_string(),
        1 => "P90".to_string(),
        2 => "P99".to_string(),
        3 => "P99.9".to_string(),
        4 => "P99.99".to_string(),
        n => format!("{n} nines"),
    }
}

/// A line with its legend entry drawn in the same style.
pub(crate) fn line<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    points: Vec<(f64, f64)>,
    style: ShapeStyle,
    label: String,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .draw_series(LineSeries::new(points, style))
        .map_err(err)?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
    Ok(())
}

/// The legend box every chart uses.
pub(crate) fn legend<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    position: SeriesLabelPosition,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font((FONT, 13))
        .draw()
        .map_err(err)
}

/// Width of a key drawn in a column of its own, pixels.
pub(crate) const KEY_WIDTH: i32 = 190;

/// A key in a column of its own: a swatch and a label per entry, top to bottom.
pub(crate) fn key_column<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, RGBColor)],
) -> Result<(), String> {
    for (k, (label, c)) in entries.iter().enumerate() {
        let y = 60 + k as i32 * 20;
        area.draw(&PathElement::new(
            vec![(4, y + 7), (26, y + 7)],
            c.stroke_width(3),
        ))
        .map_err(err)?;
        area.draw(&Text::new(
            label.clone(),
            (32, y),
            (FONT, 13).into_font().color(&BLACK),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// An axis tick: whole numbers with thousands separators, small values with the digits they need.
pub(crate) fn tick(v: &f64) -> String {
    let v = *v;
    if v.abs() >= 10.0 || (v - v.round()).abs() < 1e-9 {
        lockbench_core::format_count(v.round().max(0.0) as u64)
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// What a value axis counts, so that its ticks read in the unit that fits them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Microseconds: ticks as `850 us`, `12.3 ms`, `1.50 s`.
    Micros,
    /// Seconds: ticks as `500 ms`, `42.0 s`, `70.0 min`.
    Seconds,
    /// A plain number.
    Plain,
}

impl Unit {
    /// A tick of this axis.
    pub fn tick(self, v: &f64) -> String {
        match self {
            Unit::Micros => lockbench_core::format_readable_us(*v),
            Unit::Seconds if *v == 0.0 => "0".to_string(),
            Unit::Seconds => lockbench_core::format_readable_s(*v),
            Unit::Plain => tick(v),
        }
    }
}

/// Round steps of a time axis, seconds: 1 s up to a day.
const TIME_STEPS: [f64; 20] = [
    1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 5400.0,
    7200.0, 10800.0, 21600.0, 43200.0, 86400.0, 172800.0,
];

/// A linear time axis from zero that covers `max_s`: its top and its ticks at a round step (30 min,
/// 1 h, 1.5 h), at most eight of them.
pub(crate) fn time_ticks(max_s: f64) -> (f64, Vec<f64>) {
    let max_s = if max_s.is_finite() && max_s > 0.0 {
        max_s
    } else {
        1.0
    };
    let step = TIME_STEPS
        .iter()
        .copied()
        .find(|step| max_s / step <= 8.0)
        .unwrap_or_else(|| (max_s / 8.0 / 86400.0).ceil() * 86400.0);
    let top = (max_s / step).ceil().max(1.0) * step;
    let ticks = (0..=(top / step).round() as u64)
        .map(|i| i as f64 * step)
        .collect();
    (top, ticks)
}

/// A linear time axis from zero to `top` seconds whose ticks are the round ones of
/// [`time_ticks`], labelled by [`time_tick`] (plotters' own f64 axis picks decimal ticks).
#[derive(Clone)]
pub(crate) struct TimeAxis {
    inner: plotters::coord::types::RangedCoordf64,
    ticks: Vec<f64>,
}

impl TimeAxis {
    /// The axis covering `max_s`.
    pub(crate) fn covering(max_s: f64) -> Self {
        let (top, ticks) = time_ticks(max_s);
        TimeAxis {
            inner: (0.0..top).into(),
            ticks,
        }
    }
}

impl Ranged for TimeAxis {
    type FormatOption = plotters::coord::ranged1d::NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: plotters::coord::ranged1d::KeyPointHint>(&self, _: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

impl ValueFormatter<f64> for TimeAxis {
    fn format(value: &f64) -> String {
        time_tick(value)
    }
}

/// A round time tick, exact for every step of [`TIME_STEPS`]: "0", "45 s", "70 s", "30 min",
/// "75 min", "1 h", "1.5 h".
pub(crate) fn time_tick(v: &f64) -> String {
    let v = *v;
    let whole = |unit: f64| (v / unit - (v / unit).round()).abs() < 1e-9;
    if v <= 0.0 {
        "0".to_string()
    } else if v >= 3600.0 && whole(3600.0) {
        format!("{:.0} h", v / 3600.0)
    } else if v >= 3600.0 && whole(1800.0) {
        format!("{:.1} h", v / 3600.0)
    } else if v >= 120.0 && whole(60.0) || v == 60.0 {
        format!("{:.0} min", v / 60.0)
    } else if v >= 1.0 && whole(1.0) {
        format!("{v:.0} s")
    } else {
        lockbench_core::format_readable_s(v)
    }
}

/// A named curve of (nines, value) points.
pub type Curve = (String, Vec<(f64, f64)>);

/// A horizontal reference line: label, value, colour.
pub type RefLine = (String, f64, RGBColor);

/// Percentile curves with horizontal reference lines, linear or log value axis.
pub struct PercentileCurves {
    /// Chart title.
    pub title: String,
    /// Value axis label.
    pub y_label: String,
    /// Logarithmic value axis (latency spans decades).
    pub log_y: bool,
    /// What the values count.
    pub unit: Unit,
    /// The curves.
    pub curves: Vec<Curve>,
    /// Horizontal reference lines.
    pub lines: Vec<RefLine>,
}

impl Chart for PercentileCurves {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let x_max = self
            .curves
            .iter()
            .flat_map(|(_, p)| p.iter().map(|(x, _)| *x))
            .fold(1.0f64, f64::max);
        let values = self
            .curves
            .iter()
            .flat_map(|(_, p)| p.iter().map(|(_, y)| *y))
            .chain(self.lines.iter().map(|(_, v, _)| *v))
            .filter(|v| v.is_finite() && *v > 0.0);
        let (lo, hi) = values.fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
        let hi = if hi > 0.0 { hi } else { 1.0 };
        let x_range = 0.0..x_max;
        // The key has a column of its own, so that it covers no curve.
        let (width, _) = root.dim_in_pixel();
        let (plot, key) = root.split_horizontally(width as i32 - KEY_WIDTH);
        let entries: Vec<(String, RGBColor)> = self
            .curves
            .iter()
            .enumerate()
            .map(|(i, (label, _))| (label.clone(), colour(i)))
            .chain(self.lines.iter().map(|(label, _, c)| (label.clone(), *c)))
            .collect();
        key_column(&key, &entries)?;
        let mut builder = ChartBuilder::on(&plot);
        builder
            .caption(&self.title, (FONT, 22))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(72);
        if self.log_y {
            let lo = if lo.is_finite() {
                lo / 1.5
            } else {
                hi / 1000.0
            };
            let mut chart = builder
                .build_cartesian_2d(x_range, (lo..hi * 1.5).log_scale())
                .map_err(err)?;
            self.draw_on(&mut chart, x_max)
        } else {
            let mut chart = builder
                .build_cartesian_2d(x_range, 0.0..hi * 1.1)
                .map_err(err)?;
            self.draw_on(&mut chart, x_max)
        }
    }
}

impl PercentileCurves {
    /// The mesh, the curves, the reference lines and the legend, on either value axis.
    fn draw_on<'a, DB, X, Y>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
        x_max: f64,
    ) -> Result<(), String>
    where
        DB: DrawingBackend + 'a,
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        chart
            .configure_mesh()
            .x_labels(x_max as usize + 1)
            .x_label_formatter(&nines_label)
            .y_label_formatter(&|v| self.unit.tick(v))
            .x_desc("percentile")
            .y_desc(&self.y_label)
            .label_style((FONT, 14))
            .draw()
            .map_err(err)?;
        for (i, (label, points)) in self.curves.iter().enumerate() {
            line(
                chart,
                points.clone(),
                colour(i).stroke_width(2),
                label.clone(),
            )?;
        }
        for (label, value, c) in &self.lines {
            let points = vec![(0.0, *value), (x_max, *value)];
            line(chart, points, c.stroke_width(2), label.clone())?;
        }
        Ok(())
    }
}

/// P99.9 runtime against volume, per profile (the target, the growth runs and the review
/// trigger's search), with the TTL, the alert line and the review trigger.
pub struct RuntimeVsVolume {
    /// Chart title.
    pub title: String,
    /// What a unit of volume is.
    pub unit: String,
    /// Per profile: its name and (volume, P99.9 seconds) points, in rising volume.
    pub profiles: Vec<(String, Vec<(f64, f64)>)>,
    /// Horizontal lines across the volumes: the TTL and its alert, or a page's threshold, each
    /// with its label, seconds and colour.
    pub lines: Vec<(String, f64, RGBColor)>,
    /// The review trigger: its label and the volume at which a profile's P99.9 reaches the line
    /// it is held against.
    pub review: Option<(String, f64)>,
    /// Where the volume axis ends: past the trigger, or at the search's ceiling.
    pub max_volume: f64,
}

impl Chart for RuntimeVsVolume {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let max_volume = self.max_volume.max(1.0);
        let shown = |points: &[(f64, f64)]| -> Vec<(f64, f64)> {
            points
                .iter()
                .copied()
                .filter(|(v, _)| *v <= max_volume)
                .collect()
        };
        let highest = self
            .profiles
            .iter()
            .flat_map(|(_, p)| shown(p))
            .map(|(_, y)| y)
            .fold(self.lines.iter().map(|l| l.1).fold(0.0, f64::max), f64::max);
        let y = TimeAxis::covering(highest * 1.05);
        let top = y.range().end;
        // The key has a column of its own, so that it covers no line.
        let (width, _) = root.dim_in_pixel();
        let (plot, key) = root.split_horizontally(width as i32 - KEY_WIDTH);
        let mut entries: Vec<(String, RGBColor)> =
            self.lines.iter().map(|(l, _, c)| (l.clone(), *c)).collect();
        if let Some((label, v)) = &self.review {
            entries.push((format!("{label}: {}", tick(v)), RGBColor(64, 64, 64)));
        }
        entries.extend(
            self.profiles
                .iter()
                .enumerate()
                .map(|(i, (p, _))| (format!("{p} P99.9"), colour(i))),
        );
        key_column(&key, &entries)?;
        let mut chart = ChartBuilder::on(&plot)
            .caption(&self.title, (FONT, 22))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..max_volume, y)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_label_formatter(&tick)
            .x_desc(&self.unit)
            .y_desc("P99.9 runtime")
            .label_style((FONT, 14))
            .draw()
            .map_err(err)?;
        for (label, value, colour) in &self.lines {
            let points = vec![(0.0, *value), (max_volume, *value)];
            line(&mut chart, points, colour.stroke_width(2), label.clone())?;
        }
        if let Some((label, v)) = &self.review {
            let label = format!("{label}: {}", tick(v));
            let points = vec![(*v, 0.0), (*v, top)];
            line(&mut chart, points, BLACK.mix(0.75).stroke_width(2), label)?;
        }
        for (i, (profile, points)) in self.profiles.iter().enumerate() {
            let points = shown(points);
            let c = colour(i);
            chart
                .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))
                .map_err(err)?;
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 4, c.filled())))
                .map_err(err)?
                .label(format!("{profile} P99.9"))
                .legend(move |(x, y)| Circle::new((x + 9, y), 4, c.filled()));
        }
        Ok(())
    }
}

/// Horizontal grouped bars: one row per label, one bar per series.
pub struct HBars {
    /// Chart title.
    pub title: String,
    /// Value axis label.
    pub x_label: String,
    /// Logarithmic value axis.
    pub log_x: bool,
    /// What the values count.
    pub unit: Unit,
    /// Names of the bars in a row.
    pub series: Vec<String>,
    /// (row label, one value per series).
    pub rows: Vec<(String, Vec<f64>)>,
}

impl Chart for HBars {
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), String> {
        let n = self.rows.len().max(1) as f64;
        let values = self.rows.iter().flat_map(|(_, v)| v.iter().copied());
        let (lo, hi) = values
            .filter(|v| v.is_finite() && *v > 0.0)
            .fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(v), h.max(v)));
        let hi = if hi > 0.0 { hi } else { 1.0 };
        let labels: Vec<String> = self.rows.iter().map(|(l, _)| l.clone()).collect();
        // Row i is centred on y = i; labels only at whole numbers.
        let y_label = move |y: &f64| -> String {
            let i = y.round();
            if (y - i).abs() < 1e-6 && i >= 0.0 {
                labels.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        let y_range = -0.5..n - 0.5;
        // Room for the longest row label (about 7 px a character at 13 px) so none is clipped.
        let longest = self
            .rows
            .iter()
            .map(|(l, _)| l.chars().count())
            .max()
            .unwrap_or(0);
        let mut builder = ChartBuilder::on(root);
        builder
            .caption(&self.title, (FONT, 22))
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size((longest as u32 * 7 + 24).clamp(60, 420));
        // The value axis runs past the longest bar, so that the legend in the right-hand part
        // covers none: bars end by about two thirds of the way.
        if self.log_x {
            let lo = if lo.is_finite() { lo / 2.0 } else { hi / 100.0 };
            let top = hi * (hi / lo).max(2.0).powf(0.55);
            let mut chart = builder
                .build_cartesian_2d((lo..top).log_scale(), y_range)
                .map_err(err)?;
            self.draw_on(&mut chart, &y_label, lo)
        } else {
            let mut chart = builder
                .build_cartesian_2d(0.0..hi * 1.55, y_range)
                .map_err(err)?;
            self.draw_on(&mut chart, &y_label, 0.0)
        }
    }
}

impl HBars {
    /// The mesh with a label per row, the bars from `floor` and the legend, on either value axis.
    fn draw_on<'a, DB, X, Y>(
        &self,
        chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
        row_label: &dyn Fn(&f64) -> String,
        floor: f64,
    ) -> Result<(), String>
    where
        DB: DrawingBackend + 'a,
        X: Ranged<ValueType = f64> + ValueFormatter<f64>,
        Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(self.rows.len().max(1))
            .y_label_formatter(row_label)
            .x_label_formatter(&|v| self.unit.tick(v))
            .x_desc(&self.x_label)
            .label_style((FONT, 13))
            .draw()
            .map_err(err)?;
        let (series, rows) = (&self.series, &self.rows);
        let height = 0.8 / series.len().max(1) as f64;
        for (j, name) in series.iter().enumerate() {
            let c = colour(j);
            let bars = rows.iter().enumerate().filter_map(|(i, (_, values))| {
                let v = *values.get(j)?;
                let top = i as f64 + 0.4 - j as f64 * height;
                (v.is_finite() && v > floor)
                    .then(|| Rectangle::new([(floor, top - height), (v, top)], c.filled()))
            });
            chart
                .draw_series(bars)
                .map_err(err)?
                .label(name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], c.filled()));
        }
        legend(chart, SeriesLabelPosition::UpperRight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every time axis ticks at round values, at most eight steps, and no two of its ticks read
    /// alike (70 s printed as "1 min" beside 60 s did).
    #[test]
    fn time_axes_tick_round_and_every_label_is_its_own() {
        let mut max = 0.5f64;
        while max < 5.0 * 86400.0 {
            let (top, ticks) = time_ticks(max);
            assert!(top >= max && ticks.len() <= 9, "{max}: {ticks:?}");
            let labels: Vec<String> = ticks.iter().map(time_tick).collect();
            let mut unique = labels.clone();
            unique.dedup();
            assert_eq!(unique, labels, "{max}");
            max *= 1.37;
        }
        assert_eq!(time_tick(&5400.0), "1.5 h");
        assert_eq!(time_tick(&4500.0), "75 min");
        assert_eq!(time_tick(&70.0), "70 s");
        assert_eq!(time_tick(&1800.0), "30 min");
    }

    fn decoded(png: &[u8]) -> Vec<u8> {
        let decoder = png::Decoder::new(png);
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (WIDTH, HEIGHT));
        buf
    }

    #[test]
    fn charts_decode_and_are_not_blank() {
        let curves = PercentileCurves {
            unit: Unit::Seconds,
            title: "runtime".into(),
            y_label: "s".into(),
            log_y: false,
            curves: vec![("a".into(), vec![(0.0, 100.0), (1.0, 150.0), (3.0, 200.0)])],
            lines: vec![("TTL".into(), 600.0, TTL_COLOUR)],
        };
        let bars = HBars {
            unit: Unit::Micros,
            title: "bars".into(),
            x_label: "us".into(),
            log_x: true,
            series: vec!["P50".into(), "P99".into()],
            rows: vec![
                ("redis".into(), vec![90.0, 300.0]),
                ("etcd".into(), vec![1200.0, 4000.0]),
            ],
        };
        for rendered in [render(&curves).unwrap(), render(&bars).unwrap()] {
            let pixels = decoded(&rendered.png);
            let non_white = pixels.chunks(3).filter(|p| *p != [255, 255, 255]).count();
            assert!(non_white > 5_000, "only {non_white} drawn pixels");
            let blue = pixels.chunks(3).any(|p| p == [31, 119, 180]);
            assert!(blue, "series drawn");
            assert!(rendered.svg.starts_with("<svg"));
            assert!(
                rendered.svg.contains("<text"),
                "text drawn with the embedded font"
            );
        }
    }

    #[test]
    fn the_percentile_axis_spaces_nines_evenly() {
        assert_eq!(nines(0.0), 0.0);
        assert!((nines(0.99) - 2.0).abs() < 1e-9);
        assert!((nines(0.999) - 3.0).abs() < 1e-9);
        assert_eq!(nines_label(&3.0), "P99.9");
        assert_eq!(nines_label(&2.5), "");
    }
}
