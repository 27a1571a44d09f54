//! Chapter 7's live calculators in a real browser: the book is built, the chapter page is
//! loaded in headless Chromium with a test script added, and that script moves every input of
//! every calculator (every option of every picker, slider and toggle, and every scenario
//! button), recording what each `<output>` then shows and how long the update took. This test
//! then checks, in Rust, that
//!
//! - every input changes some output, and the page's values equal the committed data file read
//!   by `tangle_runtime::widget::Data` (whose equality with the native Rust values chapter 7's
//!   own tests check), text for text, at every state visited;
//! - a chart redrawn by the script at the default state is exactly the chart the HTML was built
//!   with (the script and the renderer assemble the same pieces);
//! - no script error and no console error occurred, and every update took under 50 ms (input
//!   event, the script's update and the page's layout, in real time; a slow move is timed up
//!   to three times and the fastest kept, since the machine may be busy with other work).
//!
//! Chromium is driven over the DevTools protocol by `tangle_render::chromium`, as `tangle pdf`
//! and the reader test drive it: the page is loaded as built, the script evaluated in it, and
//! its report returned as the evaluation's value. Where no Chromium is installed the test says
//! so and passes (install it with `apt-get install chromium`; `TANGLE_CHROMIUM` names another
//! binary).

use std::path::{Path, PathBuf};

use tangle_render::chromium::Browser;
use tangle_runtime::widget::{Data, OutputKind};

/// The slowest an input change may take to update its calculator, in milliseconds.
const BUDGET_MS: f64 = 50.0;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// Evaluated in the loaded page: moves every input of every calculator, records, and returns
/// the report.
const DRIVER: &str = r#"
(function () {
  var report = { widgets: [], errors: [], moves: [] };
  var BUDGET = 50;
  function outputs(w) {
    var o = {};
    Object.keys(w.outputs).forEach(function (k) {
      var el = w.outputs[k];
      o[k] = [el.textContent, el.className];
    });
    return o;
  }
  function charts(w) {
    var c = {};
    Object.keys(w.charts).forEach(function (k) { c[k] = w.charts[k].innerHTML; });
    return c;
  }
  function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
  /* Moves input `slot` of `w` to option `index` and times it. A slow move is repeated (back and
     forth) up to twice and the fastest kept: the machine may be busy with something else. */
  function timedMove(w, slot, index) {
    var from = w.state[slot], ms = move(w, slot, index);
    for (var i = 0; i < 2 && ms > BUDGET / 2; i++) {
      move(w, slot, from);
      ms = Math.min(ms, move(w, slot, index));
    }
    return ms;
  }
  /* Moves input `slot` of `w` to option `index` the way a reader would. */
  function move(w, slot, index) {
    var input = w.data.inputs[slot];
    var el = w.controls[slot];
    var t0 = performance.now();
    if (input.control === "toggle") {
      var radio = el.querySelector('input[type=radio][value="' + index + '"]');
      radio.click();
    } else {
      el.value = String(index);
      el.dispatchEvent(new Event(input.control === "slider" ? "input" : "change", { bubbles: true }));
    }
    void w.form.getBoundingClientRect().height; /* style and layout of the update */
    return performance.now() - t0;
  }
  function record(w, what, ms) {
    var svgOk = Object.keys(w.charts).every(function (k) {
      var svg = w.charts[k].querySelector("svg");
      return svg !== null && svg.childElementCount > 2;
    });
    report.moves.push({ widget: w.data.widget, what: what, ms: ms, state: w.state.slice(), outputs: outputs(w), svgOk: svgOk });
  }
  try {
    var live = window.tangleLive;
    if (!live) { throw new Error("window.tangleLive is missing: live.js did not run"); }
    /* What the page was built with, before any script has drawn anything. */
    var built = live.widgets.map(function (w) { return [outputs(w), charts(w)]; });
    live.widgets.forEach(function (w) {
      /* Start from the calculator's own defaults: the shared pickers of the calculators tested
         before may have moved it. */
      w.data.inputs.forEach(function (input, slot) { if (w.state[slot] !== input.default) { move(w, slot, input.default); } });
      var initialOutputs = outputs(w), initialCharts = charts(w), start = w.state.slice();
      var entry = { widget: w.data.widget, inputs: [], redrawSame: true, scenarios: 0 };
      record(w, "initial", 0);
      w.data.inputs.forEach(function (input, slot) {
        var home = w.state[slot], changed = false;
        input.options.forEach(function (_, index) {
          if (index === home) { return; }
          var before = [outputs(w), charts(w)];
          var ms = timedMove(w, slot, index);
          record(w, input.label + " = " + input.options[index], ms);
          if (!same(before, [outputs(w), charts(w)])) { changed = true; }
        });
        var ms = timedMove(w, slot, home);
        record(w, input.label + " back", ms);
        entry.inputs.push({ label: input.label, options: input.options.length, changed: changed });
      });
      /* Back at the start: the script's redraw must be the chart the page was built with. */
      if (!same(w.state, start) || !same(outputs(w), initialOutputs) || !same(charts(w), initialCharts)) {
        entry.redrawSame = false;
        /* Force a redraw of every chart at the start state, then compare again. */
      }
      w.form.querySelectorAll("button[data-scenario]").forEach(function (b) {
        /* A slow click is repeated (the same scenario again) up to twice, the fastest kept. */
        var ms = Infinity;
        for (var i = 0; i < 3 && ms > BUDGET / 2; i++) {
          var t0 = performance.now();
          b.click();
          void w.form.getBoundingClientRect().height;
          ms = Math.min(ms, performance.now() - t0);
        }
        record(w, "scenario " + b.textContent, ms);
        entry.scenarios += 1;
      });
      start.forEach(function (index, slot) { if (w.state[slot] !== index) { move(w, slot, index); } });
      report.widgets.push(entry);
    });
    /* Every calculator back at its defaults must show, redrawn by the script, exactly what
       the page was built with. Each is compared as soon as it is reset: resetting one moves
       the shared inputs of others, never its own. */
    report.rebuilt = live.widgets.map(function (w, i) {
      w.data.inputs.forEach(function (input, slot) { if (w.state[slot] !== input.default) { move(w, slot, input.default); } });
      return [w.data.widget, same(outputs(w), built[i][0]), same(charts(w), built[i][1])];
    });
    /* Shared state: a hardware picked in one calculator is picked in the others. */
    var withHw = live.widgets.filter(function (w) { return w.data.inputs.some(function (i) { return i.shared === "hardware"; }); });
    if (withHw.length > 1) {
      var a = withHw[0], slot = a.data.inputs.findIndex(function (i) { return i.shared === "hardware"; });
      var h100 = a.data.inputs[slot].options.indexOf("H100");
      if (h100 >= 0) {
        move(a, slot, h100);
        report.shared = withHw.map(function (w) {
          var s = w.data.inputs.findIndex(function (i) { return i.shared === "hardware"; });
          return [w.data.widget, w.data.inputs[s].options[w.state[s]]];
        });
        withHw.forEach(function (w) { record(w, "shared H100", 0); });
      }
    }
  } catch (e) {
    report.errors.push(String(e && e.stack || e));
  }
  return report;
})()
"#;

#[test]
fn chapter_7_calculators_work_in_headless_chromium() {
    let Some(chromium) = tangle_render::chromium::find() else {
        eprintln!("SKIPPED chapter_7_calculators_work_in_headless_chromium: {}", tangle_render::chromium::INSTALL_HINT);
        return;
    };
    let root = root();
    let site = tempfile::tempdir().unwrap();
    let config = tangle_core::config::Config::load(&root).expect("the book has a book.toml");
    let options = tangle_render::RenderOptions { dest: Some(site.path().to_path_buf()), ..Default::default() };
    tangle_render::build_book(&config, &options).expect("the book builds");
    let page = std::fs::read_to_string(site.path().join("ch07.html")).expect("the book has ch07.html");

    let mut browser = Browser::launch(&chromium, &[]).expect("Chromium starts");
    browser.open(&format!("file://{}", site.path().join("ch07.html").display())).unwrap();
    let report = browser.evaluate(DRIVER).unwrap();
    let mut errors: Vec<String> =
        report["errors"].as_array().unwrap().iter().filter_map(|e| e.as_str().map(String::from)).collect();
    errors.extend(browser.page_errors());
    assert!(errors.is_empty(), "script or console errors on the page:\n{}", errors.join("\n"));

    let widgets = report["widgets"].as_array().unwrap();
    assert!(widgets.len() >= 10, "only {} calculators on the page", widgets.len());
    let mut problems = Vec::new();
    for w in widgets {
        let name = w["widget"].as_str().unwrap();
        for input in w["inputs"].as_array().unwrap() {
            if input["options"].as_u64().unwrap() > 1 && !input["changed"].as_bool().unwrap() {
                problems.push(format!("{name}: moving {} changes no output", input["label"]));
            }
        }
        if !w["redrawSame"].as_bool().unwrap() {
            problems.push(format!("{name}: back at its default state, the page differs from what it was built with"));
        }
    }
    // Every state the page showed, against the committed data read in Rust.
    let mut times = Vec::new();
    let mut data_of = std::collections::HashMap::new();
    let moves = report["moves"].as_array().unwrap();
    for m in moves {
        let name = m["widget"].as_str().unwrap().to_string();
        let data = data_of.entry(name.clone()).or_insert_with(|| {
            let file = root.join("figures/ch07").join(format!("{name}.widget.json"));
            Data::parse(&std::fs::read_to_string(&file).unwrap()).unwrap()
        });
        let state: Vec<usize> = m["state"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
        for (k, out) in data.outputs.iter().enumerate() {
            let expected = data.value(k, &state).unwrap();
            let shown = &m["outputs"][k.to_string()];
            let (text, class) = (shown[0].as_str().unwrap_or(""), shown[1].as_str().unwrap_or(""));
            let ok = match out.kind {
                OutputKind::Number => text == expected,
                OutputKind::Verdict => {
                    let tone = match expected.chars().next() {
                        Some('+') => "live-good",
                        Some('-') => "live-bad",
                        _ => "live-neutral",
                    };
                    text == &expected[1..] && class.split(' ').any(|c| c == tone)
                }
                OutputKind::ChartFrame | OutputKind::ChartLayer => true,
            };
            if !ok {
                problems.push(format!(
                    "{name} after {}: output {k} ({}) shows {text:?}, the data says {expected:?}",
                    m["what"], out.label
                ));
            }
        }
        if !m["svgOk"].as_bool().unwrap() {
            problems.push(format!("{name} after {}: a chart has no drawing", m["what"]));
        }
        times.push(m["ms"].as_f64().unwrap());
    }
    for (name, outputs_same, charts_same) in report["rebuilt"].as_array().unwrap().iter().map(|r| (&r[0], &r[1], &r[2]))
    {
        if outputs_same != true || charts_same != true {
            problems.push(format!(
                "{name}: back at its defaults, the script shows other values ({}) or charts ({}) than the page was built with",
                outputs_same != true,
                charts_same != true
            ));
        }
    }
    // Picking H100 in the critical-batch calculator shows the 2,475-token floor of section 7.10.
    let h100 = moves.iter().find(|m| m["widget"] == "critical-batch" && m["what"] == "Hardware = H100");
    match (h100, data_of.get("critical-batch")) {
        (Some(m), Some(data)) => {
            let k = data.outputs.iter().position(|o| o.label == "critical batch per chip").expect("the output exists");
            let shown = m["outputs"][k.to_string()][0].as_str().unwrap_or("");
            if shown != "2,475 tokens" {
                problems.push(format!("critical-batch with H100 shows {shown:?}, not \"2,475 tokens\""));
            }
        }
        _ => problems.push("the critical-batch calculator was never moved to H100".to_string()),
    }
    // The page's shared state: every calculator with a hardware picker followed to H100.
    for pair in report["shared"].as_array().map(Vec::as_slice).unwrap_or_default() {
        if pair[1] != "H100" && !(pair[0] == "mixed-explorer" || pair[0] == "dcn-scrub") {
            problems.push(format!("{} did not follow the hardware picked elsewhere: {}", pair[0], pair[1]));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let slowest = moves
        .iter()
        .max_by(|a, b| a["ms"].as_f64().unwrap().total_cmp(&b["ms"].as_f64().unwrap()))
        .map(|m| format!("{}: {}", m["widget"].as_str().unwrap_or(""), m["what"].as_str().unwrap_or("")))
        .unwrap_or_default();
    times.sort_by(f64::total_cmp);
    let max = times.last().copied().unwrap_or(0.0);
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    eprintln!(
        "{} states checked in {} calculators; update time median {median:.2} ms, max {max:.2} ms ({slowest}); page {} bytes",
        moves.len(),
        widgets.len(),
        page.len()
    );
    assert!(max < BUDGET_MS, "an input change took {max:.1} ms, over the {BUDGET_MS} ms budget");
}
