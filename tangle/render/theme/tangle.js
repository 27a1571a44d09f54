/* Live calculators (tangle_runtime::widget, `{{#widget NAME | caption}}`).

   Every value and every chart piece a calculator can show was computed, formatted or drawn by
   the chapter's Rust when the chapter ran, for every combination of the calculator's inputs,
   and inlined in its form as JSON (`<script type="application/json" class="live-data">`).
   This script only looks values up and swaps text and SVG: it does no arithmetic on the
   chapter's quantities, loads nothing, and uses no framework. The page without it shows the
   default state, which the HTML already holds.

   Data layout (format 1): inputs[i] = {control, label, options, default, shared?};
   scenarios[s] = {label, set: [[input, option], ...]}; outputs[k] = {kind, label, chart?,
   deps, values, index?}: output k at a state is values[index[row]] (or values[row]) where row
   numbers the state's options of the inputs in `deps`, the first varying slowest. A chart is
   its "frame" piece followed by its "layer" pieces, closed by CLOSING. */
(function () {
  "use strict";

  var CLOSING = "</g></svg>";
  var widgets = [];

  function valueOf(data, k, state) {
    var out = data.outputs[k];
    var row = 0;
    for (var i = 0; i < out.deps.length; i++) {
      var d = out.deps[i];
      row = row * data.inputs[d].options.length + state[d];
    }
    return out.index ? out.values[out.index[row]] : out.values[row];
  }

  function tone(sign) {
    return sign === "+" ? "good" : sign === "-" ? "bad" : "neutral";
  }

  /* The chart pieces of every chart at `state`, closed: {chart number: svg text}. */
  function charts(data, state) {
    var pieces = {};
    data.outputs.forEach(function (out, k) {
      if (out.kind === "frame" || out.kind === "layer") {
        pieces[out.chart] = (pieces[out.chart] || "") + valueOf(data, k, state);
      }
    });
    Object.keys(pieces).forEach(function (c) {
      pieces[c] += CLOSING;
    });
    return pieces;
  }

  /* Shows input `slot`'s option in its control. */
  function reflect(w, slot) {
    var input = w.data.inputs[slot];
    var el = w.controls[slot];
    var index = w.state[slot];
    if (input.control === "toggle") {
      el.querySelectorAll("input[type=radio]").forEach(function (r) {
        r.checked = Number(r.value) === index;
      });
    } else {
      el.value = String(index);
    }
    if (input.control === "slider") {
      var text = input.options[index];
      el.setAttribute("aria-valuetext", text);
      var shown = w.form.querySelector('output[for="' + el.id + '"]');
      if (shown) {
        shown.textContent = text;
      }
    }
  }

  function update(w) {
    var data = w.data;
    data.outputs.forEach(function (out, k) {
      var el = w.outputs[k];
      if (!el) {
        return;
      }
      var v = valueOf(data, k, w.state);
      if (out.kind === "number") {
        el.textContent = v;
      } else if (out.kind === "verdict") {
        el.textContent = v.slice(1);
        el.className = "live-" + tone(v.charAt(0));
      }
    });
    var pieces = charts(data, w.state);
    Object.keys(pieces).forEach(function (c) {
      var box = w.charts[c];
      if (box && w.drawn[c] !== pieces[c]) {
        box.innerHTML = pieces[c];
        w.drawn[c] = pieces[c];
      }
    });
  }

  /* Sets input `slot` of widget `w` to option `index`; returns whether it changed. */
  function assign(w, slot, index) {
    if (w.state[slot] === index) {
      return false;
    }
    w.state[slot] = index;
    reflect(w, slot);
    return true;
  }

  /* The page's shared state: other widgets' inputs with the same key follow, by option label. */
  function propagate(from, slot) {
    var input = from.data.inputs[slot];
    if (!input.shared) {
      return;
    }
    var label = input.options[from.state[slot]];
    widgets.forEach(function (w) {
      if (w === from) {
        return;
      }
      var changed = false;
      w.data.inputs.forEach(function (other, s) {
        if (other.shared === input.shared) {
          var i = other.options.indexOf(label);
          if (i >= 0 && assign(w, s, i)) {
            changed = true;
          }
        }
      });
      if (changed) {
        update(w);
      }
    });
  }

  function change(w, slot, index) {
    if (assign(w, slot, index)) {
      update(w);
      propagate(w, slot);
    }
  }

  function setup(form) {
    var script = form.querySelector("script.live-data");
    if (!script) {
      return;
    }
    var data = JSON.parse(script.textContent);
    if (data.format !== 1) {
      return;
    }
    var w = {
      form: form,
      data: data,
      state: data.inputs.map(function (i) {
        return i.default;
      }),
      controls: [],
      outputs: {},
      charts: {},
      drawn: {},
    };
    data.inputs.forEach(function (input, slot) {
      var el = form.querySelector('[data-input="' + slot + '"]');
      w.controls[slot] = el;
      if (input.control === "toggle") {
        el.addEventListener("change", function (e) {
          change(w, slot, Number(e.target.value));
        });
      } else {
        el.addEventListener(input.control === "slider" ? "input" : "change", function () {
          change(w, slot, Number(el.value));
        });
      }
    });
    form.querySelectorAll("output[data-output]").forEach(function (o) {
      w.outputs[Number(o.getAttribute("data-output"))] = o;
    });
    form.querySelectorAll("[data-chart]").forEach(function (c) {
      w.charts[Number(c.getAttribute("data-chart"))] = c;
    });
    /* What the page was built with is the default state; no redraw is needed until a change. */
    var initial = charts(data, w.state);
    Object.keys(initial).forEach(function (c) {
      w.drawn[c] = initial[c];
    });
    form.querySelectorAll("button[data-scenario]").forEach(function (b) {
      b.addEventListener("click", function () {
        var changed = [];
        data.scenarios[Number(b.getAttribute("data-scenario"))].set.forEach(function (pair) {
          if (assign(w, pair[0], pair[1])) {
            changed.push(pair[0]);
          }
        });
        if (changed.length) {
          update(w);
          changed.forEach(function (slot) {
            propagate(w, slot);
          });
        }
      });
    });
    form.addEventListener("submit", function (e) {
      e.preventDefault();
    });
    form.classList.add("live-ready");
    widgets.push(w);
  }

  document.querySelectorAll("form.live").forEach(setup);

  /* For tests and the curious: the widgets and the lookup. */
  window.tangleLive = { widgets: widgets, valueOf: valueOf, charts: charts, change: change };
})();
