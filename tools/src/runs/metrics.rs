//! `get_metrics` (a summary per metric and the newest records by default; a range, or every
//! record written to a file, on request) and `get_progress`.
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use factory_platform::MetricsQuery;
use factory_platform::wire::runs::{MetricRecord, RecordFields};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    error::ToolError,
    export::{self, Exported, FileFormat, ToFile},
    reply::{Outcome, ToolResult},
    server::Call,
    state::{AppState, check_id},
};

use super::*;

/// Records of the default answer: the newest steps.
const DEFAULT_RECORDS: usize = 10;
/// Bytes of summary and records in the default answer (the whole answer stays under 4 KB).
const DEFAULT_ANSWER_BYTES: usize = 3_500;
/// Bytes of summary and records when the caller asked for a range or a count (under the 16 KB
/// cap on any answer).
const ASKED_ANSWER_BYTES: usize = 14_000;
/// Points the trend is fitted over: the newest of the window.
const TREND_POINTS: usize = 10;
/// A fitted change smaller than this share of the values' mean magnitude is "flat".
const FLAT_SHARE: f64 = 0.02;
/// Series whose points get room up front in [`summarise`], and how many points at most.
const ROOM_SERIES: usize = 64;
const ROOM_POINTS: usize = 1024;
/// Most metric names `names` may list.
const MAX_NAMES: usize = 50;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricsArgs {
    pub run_id: String,
    /// Only steps at or after this one.
    pub min_step: Option<i64>,
    /// Only steps at or before this one.
    pub max_step: Option<i64>,
    /// Records to return, newest kept, 1 to 500 (default 10; with a step range, all of it).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
    /// Only these metrics, e.g. loss, reward/mean.
    pub names: Option<Vec<String>>,
    /// Write every record of the range to a file (default csv).
    pub to_file: Option<ToFile>,
}

/// One metric over the window.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MetricSummary {
    pub first: f64,
    pub last: f64,
    pub min: f64,
    pub max: f64,
    /// rising, falling or flat: the sign of the least-squares line through the newest 10
    /// points, flat when its change over them is under 2% of their mean magnitude; null with
    /// fewer than 3 points.
    pub trend: Option<&'static str>,
    /// That fitted change, in percent of the points' mean magnitude.
    pub change_pct: Option<f64>,
}

/// The steps a summary covers.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Window {
    pub first_step: Option<i64>,
    pub last_step: Option<i64>,
    pub records: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MetricsOut {
    pub run_id: String,
    pub window: Window,
    /// Per metric over the window (values to 6 significant digits; files keep them exact).
    pub summary: BTreeMap<String, MetricSummary>,
    /// The newest records of the window, as the platform sends them (`step` plus values).
    pub metrics: Vec<Value>,
    pub count: usize,
    /// Fewer records (or metric summaries) than the window holds are listed.
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exported: Option<Exported>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn check_names(names: &[String]) -> Result<(), ToolError> {
    if names.is_empty() || names.len() > MAX_NAMES {
        return Err(ToolError::new(format!(
            "`names` lists 1 to {MAX_NAMES} metric names; got {}.",
            names.len()
        )));
    }
    for n in names {
        if n.is_empty()
            || n.len() > 128
            || n.contains(char::is_whitespace)
            || !factory_policies::untrusted::is_plain(n)
        {
            return Err(ToolError::new(
                "`names` are metric names as records carry them (e.g. loss, reward/mean): 1 to 128 characters, no spaces or control characters.",
            ));
        }
    }
    Ok(())
}

/// `record` with only `step` and the named metrics.
fn keep_names(record: Value, names: &[String]) -> Value {
    match record {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| k == "step" || names.contains(k))
                .collect(),
        ),
        other => other,
    }
}

/// `x` to 6 significant digits: enough to read a curve, a third of the bytes of a full float.
fn sig6(x: f64) -> f64 {
    format!("{x:.5e}").parse().unwrap_or(x)
}

/// The trend of `points` (step, value), oldest first: the least-squares slope times the steps
/// they span, as a share of their mean magnitude.
fn trend(points: &[(f64, f64)]) -> (Option<&'static str>, Option<f64>) {
    if points.len() < 3 {
        return (None, None);
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx == 0.0 {
        return (None, None);
    }
    let slope = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    let span = points[points.len() - 1].0 - points[0].0;
    let change = slope * span;
    let scale = points.iter().map(|p| p.1.abs()).sum::<f64>() / n;
    if scale == 0.0 || !change.is_finite() {
        return (Some("flat"), None);
    }
    let share = change / scale;
    let word = if share > FLAT_SHARE {
        "rising"
    } else if share < -FLAT_SHARE {
        "falling"
    } else {
        "flat"
    };
    (Some(word), Some((share * 1000.0).round() / 10.0))
}

/// Every numeric metric (all fields but `step`; only `names` when given) of `records`, read
/// with [`MetricRecord::fields`], oldest first (`None` for a record that is not an object). A
/// metric is numeric in a record when its last occurrence there is a number, as in the record
/// read as a JSON object.
fn summarise<'a>(
    records: impl ExactSizeIterator<Item = Option<&'a RecordFields<'a>>>,
    names: Option<&[String]>,
) -> BTreeMap<String, MetricSummary> {
    /// A metric's points, and the record its last point came from.
    #[derive(Default)]
    struct Series {
        last_from: Option<usize>,
        points: Vec<(f64, f64)>,
    }
    let mut series: Vec<(&str, Series)> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::new();
    // Records mostly list the same names in the same order: the series a field's position
    // held in the record before is tried before the name is hashed.
    let mut by_position: Vec<usize> = Vec::new();
    // A metric has a point in most records: the first metrics' points are given room for one
    // in each (up to a bound, so that a sparse or hostile answer cannot make this large).
    let room = records.len().min(ROOM_POINTS);
    for (i, fields) in records.enumerate() {
        let Some(fields) = fields else { continue };
        let x = fields.step.map_or(i as f64, |s| s as f64);
        for (j, (name, value)) in fields.values().enumerate() {
            if names.is_some_and(|n| !n.iter().any(|n| n == name)) {
                continue;
            }
            let k = match by_position.get(j) {
                Some(&k) if series.get(k).is_some_and(|(n, _)| *n == name) => k,
                _ => {
                    let k = *index.entry(name).or_insert_with(|| {
                        series.push((
                            name,
                            Series {
                                last_from: None,
                                points: Vec::with_capacity(if series.len() < ROOM_SERIES {
                                    room
                                } else {
                                    0
                                }),
                            },
                        ));
                        series.len() - 1
                    });
                    if by_position.len() <= j {
                        by_position.resize(j + 1, usize::MAX);
                    }
                    by_position[j] = k;
                    k
                }
            };
            let s = &mut series[k].1;
            // A name sent twice in one record: the last occurrence stands.
            if s.last_from == Some(i) {
                s.points.pop();
                s.last_from = None;
            }
            if let Some(y) = value {
                s.points.push((x, y));
                s.last_from = Some(i);
            }
        }
    }
    series
        .into_iter()
        .filter(|(_, s)| !s.points.is_empty())
        .map(|(name, s)| (name.to_string(), summary_of_points(&s.points)))
        .collect()
}

/// One metric's summary from its points (step, value), oldest first; at least one.
fn summary_of_points(pts: &[(f64, f64)]) -> MetricSummary {
    let ys = pts.iter().map(|p| p.1);
    let (trend, change_pct) = trend(&pts[pts.len().saturating_sub(TREND_POINTS)..]);
    MetricSummary {
        first: sig6(pts[0].1),
        last: sig6(pts[pts.len() - 1].1),
        min: sig6(ys.clone().fold(f64::INFINITY, f64::min)),
        max: sig6(ys.fold(f64::NEG_INFINITY, f64::max)),
        trend,
        change_pct,
    }
}

/// Fills `budget` bytes: the summary first (metrics in name order, the rest dropped and
/// counted), then records from `newest_first`, at most `wanted`. Returns the number of metrics
/// dropped and the records kept, oldest first.
fn fit(
    summary: &mut BTreeMap<String, MetricSummary>,
    newest_first: impl Iterator<Item = Value>,
    wanted: usize,
    mut budget: usize,
) -> (usize, Vec<Value>) {
    let mut omitted = 0;
    let mut used = 0;
    summary.retain(|name, s| {
        let cost = name.len() + json_len(s) + 4;
        let keep = used + cost <= budget;
        used += if keep { cost } else { 0 };
        omitted += usize::from(!keep);
        keep
    });
    budget -= used;
    let mut kept = Vec::new();
    for r in newest_first.take(wanted) {
        let cost = json_len(&r) + 1;
        if cost > budget {
            break;
        }
        budget -= cost;
        kept.push(r);
    }
    kept.reverse();
    (omitted, kept)
}

/// The bytes of `v`'s compact JSON, counted without building it.
fn json_len<T: Serialize>(v: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    serde_json::to_writer(&mut n, v).map_or(0, |()| n.0)
}

pub(super) async fn get_metrics(
    state: Arc<AppState>,
    args: MetricsArgs,
    _call: Call,
) -> ToolResult<MetricsOut> {
    check_id("run", &args.run_id)?;
    if let (Some(a), Some(b)) = (args.min_step, args.max_step)
        && a > b
    {
        return Err(ToolError::new(format!(
            "`min_step` ({a}) is after `max_step` ({b})."
        )));
    }
    if let Some(names) = &args.names {
        check_names(names)?;
    }
    let ranged = args.min_step.is_some() || args.max_step.is_some();
    let asked = args.limit.is_some() || ranged;
    let wanted = match (args.limit, &args.to_file) {
        (Some(l), _) => l as usize,
        (None, Some(_)) => 0,
        (None, None) if ranged => state.limits.metric_records,
        (None, None) => DEFAULT_RECORDS,
    }
    .min(state.limits.metric_records);
    // Resolved before the platform is asked, so a bad dest_dir fails fast.
    let target = match &args.to_file {
        Some(t) => Some(t.target(&state, &args.run_id, FileFormat::Csv)?),
        None => None,
    };
    let resp = state
        .platform()?
        .get_metrics(
            &args.run_id,
            &MetricsQuery {
                min_step: args.min_step,
                max_step: args.max_step,
                // The platform's `limit` keeps the first records; we want the newest, so the
                // range is read whole and cut here.
                limit: None,
            },
        )
        .await
        .map_err(|e| not_found_or(&args.run_id, "get metrics of run", e))?;
    // Each record is read for its step and numbers without building a tree; only the ones
    // listed (or written to a file) become trees.
    let records = resp.metrics;
    let fields: Vec<Option<RecordFields>> = records.iter().map(MetricRecord::fields).collect();
    let step = |i: usize| fields[i].as_ref().and_then(|f| f.step);
    let mut order: Vec<usize> = (0..records.len()).collect();
    order.sort_by_key(|&i| step(i).unwrap_or(i64::MIN));
    let names = args.names.as_deref();
    let shown = |i: usize| {
        let record = records[i].to_value();
        match names {
            Some(names) => keep_names(record, names),
            None => record,
        }
    };
    let window = Window {
        first_step: order.first().and_then(|&i| step(i)),
        last_step: order.last().and_then(|&i| step(i)),
        records: records.len(),
    };
    let mut summary = summarise(order.iter().map(|&i| fields[i].as_ref()), names);
    let exported = match target {
        Some((dest, format)) => {
            let rows = order.iter().map(|&i| shown(i)).collect();
            Some(export::write_rows(&state, dest, "metrics", format, rows).await?)
        }
        None => None,
    };

    let budget = if asked {
        ASKED_ANSWER_BYTES
    } else {
        DEFAULT_ANSWER_BYTES
    };
    let newest_first = order.iter().rev().map(|&i| shown(i));
    let (omitted, metrics) = fit(&mut summary, newest_first, wanted, budget);
    let count = metrics.len();
    let truncated = count < records.len() || omitted > 0;
    let mut notes = Vec::new();
    if records.is_empty() {
        notes.push("No metric records in this window yet.".to_string());
    }
    if omitted > 0 {
        notes.push(format!(
            "{omitted} metric(s) not summarised to keep the answer small: limit 1 shows every name; pass the ones you need as names, or export all with to_file."
        ));
    }
    if count < records.len() && exported.is_none() {
        notes.push(format!(
            "Listing the newest {count} of {} records: ask for a range (min_step, max_step, limit) or write them all with to_file.",
            records.len()
        ));
    }
    let summary_line = format!(
        "{} metric(s) of run {} over {} record(s){}; {count} listed{}",
        summary.len() + omitted,
        args.run_id,
        records.len(),
        match (window.first_step, window.last_step) {
            (Some(a), Some(b)) => format!(" (steps {a}–{b})"),
            _ => String::new(),
        },
        exported
            .as_ref()
            .map(|e| format!("; {} row(s) written to {}", e.rows, e.path))
            .unwrap_or_default()
    );
    let out = MetricsOut {
        run_id: args.run_id,
        window,
        summary,
        metrics: Vec::new(),
        count,
        truncated,
        exported,
        note: (!notes.is_empty()).then(|| notes.join(" ")),
    };
    // The records are trees already: moved into the answer's tree (into the place its empty
    // list holds), not copied by serialising them again. Should the rest not make a tree, the
    // answer is shaped from the body as any other, and fails there as any other would.
    match serde_json::to_value(&out) {
        Ok(mut tree) => {
            tree["metrics"] = Value::Array(metrics);
            Ok(Outcome::tree(summary_line, tree))
        }
        Err(_) => Ok(Outcome::done(summary_line, MetricsOut { metrics, ..out })),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ProgressOut {
    pub run_id: String,
    /// The latest completed step; null before the first.
    pub latest_step: Option<i64>,
    pub steps_with_samples: Vec<i64>,
    pub steps_with_distributions: Vec<i64>,
    /// When progress last changed, as the platform reports it.
    pub last_updated_at: Option<String>,
}

pub(super) async fn get_progress(
    state: Arc<AppState>,
    args: RunIdArgs,
    _call: Call,
) -> ToolResult<ProgressOut> {
    check_id("run", &args.run_id)?;
    let p = state
        .platform()?
        .get_progress(&args.run_id)
        .await
        .map_err(|e| not_found_or(&args.run_id, "get progress of run", e))?;
    let summary = match p.latest_step {
        Some(s) => format!("Run {} has completed step {s}", args.run_id),
        None => format!("Run {} has completed no step yet", args.run_id),
    };
    Ok(Outcome::done(
        summary,
        ProgressOut {
            run_id: args.run_id,
            latest_step: p.latest_step,
            steps_with_samples: p.steps_with_samples,
            steps_with_distributions: p.steps_with_distributions,
            last_updated_at: p.last_updated_at,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The summary of `records` (in this order) as get_metrics makes it.
    fn summary_of(records: &[Value], names: Option<&[String]>) -> BTreeMap<String, MetricSummary> {
        let records: Vec<MetricRecord> = records.iter().map(MetricRecord::from).collect();
        let fields: Vec<_> = records.iter().map(MetricRecord::fields).collect();
        summarise(fields.iter().map(Option::as_ref), names)
    }

    fn line(n: usize, f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        (1..=n).map(|i| (i as f64, f(i as f64))).collect()
    }

    #[test]
    fn trend_is_the_fitted_change_over_the_points_as_a_share_of_their_size() {
        // loss 2.0, 1.9, … 1.1 over 10 steps: a fitted change of -0.9 on a mean of 1.55.
        let (word, pct) = trend(&line(10, |x| 2.1 - 0.1 * x));
        assert_eq!(word, Some("falling"));
        assert_eq!(pct, Some(-58.1));
        assert_eq!(trend(&line(10, |x| 0.1 * x)).0, Some("rising"));
        // Noise of 1% around 1.0 is flat.
        let (word, _) = trend(&line(10, |x| 1.0 + 0.01 * (x % 2.0)));
        assert_eq!(word, Some("flat"));
        assert_eq!(trend(&line(10, |_| 0.0)), (Some("flat"), None));
        assert_eq!(trend(&line(2, |x| x)), (None, None));
    }

    #[test]
    fn summary_covers_every_numeric_metric_in_step_order() {
        let records = vec![
            json!({"step": 1, "loss": 3.0, "note": "x"}),
            json!({"step": 2, "loss": 1.0, "reward/mean": 0.5}),
            json!({"step": 3, "loss": 2.0, "reward/mean": 0.123456789}),
        ];
        let s = summary_of(&records, None);
        assert_eq!(s.keys().collect::<Vec<_>>(), ["loss", "reward/mean"]);
        let loss = &s["loss"];
        assert_eq!(
            (loss.first, loss.last, loss.min, loss.max),
            (3.0, 2.0, 1.0, 3.0)
        );
        assert_eq!(loss.trend, Some("falling"));
        let reward = &s["reward/mean"];
        assert_eq!((reward.first, reward.last), (0.5, 0.123457));
        assert_eq!(reward.trend, None, "two points give no trend");
    }

    #[test]
    fn many_metrics_still_fit_the_default_answer() {
        // 60 metrics with long names and full-precision values, 150 steps.
        let records: Vec<Value> = (1..=150)
            .map(|step| {
                let mut r = serde_json::Map::new();
                r.insert("step".into(), json!(step));
                for m in 0..60 {
                    let v = 1.0 / (step as f64 + m as f64 + 0.123456789);
                    r.insert(format!("train/metric_number_{m:02}/mean"), json!(v));
                }
                Value::Object(r)
            })
            .collect();
        let mut summary = summary_of(&records, None);
        assert_eq!(summary.len(), 60);
        let (omitted, kept) = fit(
            &mut summary,
            records.iter().rev().cloned(),
            DEFAULT_RECORDS,
            DEFAULT_ANSWER_BYTES,
        );
        let bytes = json_len(&summary) + json_len(&kept);
        assert!(bytes <= DEFAULT_ANSWER_BYTES, "{bytes}");
        assert_eq!(omitted + summary.len(), 60);
        assert!(omitted > 0 && kept.is_empty(), "{omitted} {}", kept.len());
        // Named metrics (a handful) leave room for the newest records.
        let names = ["train/metric_number_01/mean".to_string()];
        let few: Vec<Value> = records
            .iter()
            .map(|r| keep_names(r.clone(), &names))
            .collect();
        let mut summary = summary_of(&records, Some(&names));
        assert_eq!(summary_of(&few, None).len(), 1);
        let (omitted, kept) = fit(
            &mut summary,
            few.iter().rev().cloned(),
            DEFAULT_RECORDS,
            DEFAULT_ANSWER_BYTES,
        );
        assert_eq!((omitted, kept.len()), (0, DEFAULT_RECORDS));
        assert_eq!(kept[9]["step"], 150);
    }

    /// The summary as it was made before records were read without trees: from each record
    /// read as a JSON object (the reference of the differential test below).
    fn summary_by_tree(records: &[Value]) -> BTreeMap<String, MetricSummary> {
        let mut series: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
        for (i, r) in records.iter().enumerate() {
            let Value::Object(map) = r else { continue };
            let x = r
                .get("step")
                .and_then(Value::as_i64)
                .map_or(i as f64, |s| s as f64);
            for (k, v) in map {
                if let (false, Some(y)) = (k == "step", v.as_f64()) {
                    series.entry(k).or_default().push((x, y));
                }
            }
        }
        // The same per-series arithmetic as `summarise`: the test is of the reading.
        series
            .into_iter()
            .map(|(name, pts)| (name.to_string(), summary_of_points(&pts)))
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Records as a platform could send them — names repeated within a record, steps that
        /// are missing, fractional or strings, values of every JSON type, records that are not
        /// objects — summarise as they did when each record was read as a JSON object.
        #[test]
        fn records_read_without_trees_summarise_as_trees_did(
            records in proptest::collection::vec(
                proptest::option::weighted(
                    0.9,
                    proptest::collection::vec((0usize..5, 0usize..7, -1000i64..1000), 0..8),
                ),
                0..12,
            ),
            only in proptest::option::of(proptest::collection::vec(0usize..5, 1..3)),
        ) {
            const NAMES: [&str; 5] = ["step", "loss", "reward/mean", "lr", "esc\\\"aped"];
            let value = |kind: usize, n: i64| match kind {
                0 => n.to_string(),
                1 => format!("{}.25", n),
                2 => format!("\"{n}\""),
                3 => "null".to_string(),
                4 => "true".to_string(),
                5 => format!("{{\"a\": [{n}]}}"),
                _ => format!("{}", n.unsigned_abs() + u64::MAX / 2),
            };
            let texts: Vec<String> = records
                .iter()
                .map(|r| match r {
                    None => "[1, 2]".to_string(),
                    Some(fields) => {
                        let body: Vec<String> = fields
                            .iter()
                            .map(|(k, kind, n)| format!("\"{}\": {}", NAMES[*k], value(*kind, *n)))
                            .collect();
                        format!("{{{}}}", body.join(", "))
                    }
                })
                .collect();
            let names: Option<Vec<String>> = only.map(|o| {
                o.iter().map(|&k| serde_json::from_str::<String>(&format!("\"{}\"", NAMES[k])).unwrap()).collect()
            });
            let trees: Vec<Value> = texts
                .iter()
                .map(|t| serde_json::from_str::<Value>(t).unwrap())
                .map(|v| match &names {
                    Some(n) => keep_names(v, n),
                    None => v,
                })
                .collect();
            let raw: Vec<MetricRecord> = texts
                .iter()
                .map(|t| serde_json::from_str(t).unwrap())
                .collect();
            let fields: Vec<_> = raw.iter().map(MetricRecord::fields).collect();
            let got = summarise(fields.iter().map(Option::as_ref), names.as_deref());
            let want = summary_by_tree(&trees);
            proptest::prop_assert_eq!(
                serde_json::to_value(&got).unwrap(),
                serde_json::to_value(&want).unwrap()
            );
        }
    }

    #[test]
    fn metric_names_are_checked() {
        assert!(check_names(&["loss".into(), "reward/mean".into()]).is_ok());
        assert!(check_names(&[]).is_err());
        assert!(check_names(&["a b".into()]).is_err());
        assert!(check_names(&["a\u{1b}[2J".into()]).is_err());
        assert!(check_names(&["loss\u{202e}".into()]).is_err());
        assert!(check_names(&vec!["x".to_string(); MAX_NAMES + 1]).is_err());
        let kept = keep_names(json!({"step": 4, "loss": 1, "lr": 2}), &["loss".into()]);
        assert_eq!(kept, json!({"step": 4, "loss": 1}));
    }
}
