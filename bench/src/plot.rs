//! PNG line charts with plotters' bitmap backend.
//!
//! Text is drawn with DejaVu Sans compiled into the binary (the `dejavu`
//! crate, registered with plotters' `ab_glyph` backend), so the plots
//! render the same on a machine without any system fonts.

use std::path::Path;
use std::sync::Once;

use anyhow::anyhow;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

/// One line of a chart.
pub struct Series {
    /// Its legend entry.
    pub name: String,
    /// `(x, y)` points, in data units.
    pub points: Vec<(f64, f64)>,
}

/// A chart: title, axis labels, and which axes are logarithmic.
pub struct Chart<'a> {
    /// Caption above the plot.
    pub title: &'a str,
    /// X axis description.
    pub x_label: &'a str,
    /// Y axis description.
    pub y_label: &'a str,
    /// Log-scaled x axis.
    pub x_log: bool,
    /// Log-scaled y axis.
    pub y_log: bool,
}

const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

static FONT: Once = Once::new();

fn register() -> anyhow::Result<()> {
    let mut outcome = Ok(());
    FONT.call_once(|| {
        outcome = register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| anyhow!("the embedded DejaVu Sans font did not load"));
    });
    outcome
}

/// A value on an axis, transformed when the axis is logarithmic.
fn axis(v: f64, log: bool) -> f64 {
    if log {
        v.max(f64::MIN_POSITIVE).log10()
    } else {
        v
    }
}

/// A tick label: the data value, with two significant digits or so. On
/// a log axis only 1, 2 and 5 times a power of ten are labelled (ticks
/// fall at even steps of the logarithm, so most are not round numbers).
fn label(v: f64, log: bool) -> String {
    let value = if log { 10f64.powf(v) } else { v };
    if log {
        let decade = 10f64.powf(v.floor());
        let round = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .any(|m| ((value / decade) / m - 1.0).abs() < 0.03);
        if !round {
            return String::new();
        }
    }
    let magnitude = value.abs();
    if magnitude >= 1e6 {
        format!("{:.1}M", value / 1e6)
    } else if magnitude >= 1e4 {
        format!("{:.0}k", value / 1e3)
    } else if magnitude >= 100.0 || (value - value.round()).abs() < 1e-9 {
        format!("{value:.0}")
    } else if magnitude >= 1.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// The range covering `values`, with a margin.
fn range(values: impl Iterator<Item = f64>, log: bool, from_zero: bool) -> std::ops::Range<f64> {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    let (lo, hi) = if from_zero && !log {
        (lo.min(0.0), hi)
    } else {
        (lo, hi)
    };
    let pad = ((hi - lo) * 0.08).max(if log { 0.1 } else { hi.abs() * 0.05 + 1e-9 });
    (lo - if from_zero && !log && lo == 0.0 {
        0.0
    } else {
        pad
    })..(hi + pad)
}

/// Draws `series` into a PNG at `path`.
pub fn draw(path: &Path, chart: &Chart<'_>, series: &[Series]) -> anyhow::Result<()> {
    register()?;
    let xs = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| axis(p.0, chart.x_log)));
    let ys = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| axis(p.1, chart.y_log)));
    let (x_range, y_range) = (range(xs, chart.x_log, false), range(ys, chart.y_log, true));
    let root = BitMapBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut plot = ChartBuilder::on(&root)
        .caption(chart.title, ("sans-serif", 24))
        .margin(18)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x_range, y_range)?;
    let (x_log, y_log) = (chart.x_log, chart.y_log);
    plot.configure_mesh()
        .x_desc(chart.x_label)
        .y_desc(chart.y_label)
        .x_labels(if x_log { 40 } else { 10 })
        .y_labels(if y_log { 40 } else { 10 })
        .x_label_formatter(&|v| label(*v, x_log))
        .y_label_formatter(&|v| label(*v, y_log))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .draw()?;
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let points: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|&(x, y)| (axis(x, x_log), axis(y, y_log)))
            .collect();
        plot.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(s.name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(3))
            });
        if points.len() <= 40 {
            plot.draw_series(
                points
                    .into_iter()
                    .map(|p| Circle::new(p, 4, color.filled())),
            )?;
        }
    }
    plot.configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font(("sans-serif", 16))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_as_data_values() {
        assert_eq!(label(3.0, true), "1000");
        assert_eq!(label(4.0, true), "10k");
        assert_eq!(label(2f64.log10(), true), "2");
        assert_eq!(label(1.2, true), "");
        assert_eq!(label(0.5, false), "0.50");
        assert_eq!(label(2_500_000.0, false), "2.5M");
    }

    #[test]
    fn draws_a_png_with_text() {
        let dir = std::env::temp_dir().join(format!("dfbench-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("chart.png");
        let series = [Series {
            name: "a line".into(),
            points: vec![(10.0, 1.0), (100.0, 2.0), (1000.0, 3.0)],
        }];
        let chart = Chart {
            title: "Title",
            x_label: "x",
            y_label: "y",
            x_log: true,
            y_log: false,
        };
        draw(&path, &chart, &series).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
