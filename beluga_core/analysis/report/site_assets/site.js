/* beluga result site: one page, routed by the URL's hash, reading the data shards under data/.
 *
 * Works from file:// (no server): shards are .js files added with <script> tags (Chromium blocks fetch, XHR
 * and workers there). Every text from the store goes into the DOM through textContent or an attribute, never
 * through innerHTML, so case text such as "<script>" is shown, not run.
 *
 * The page computes no score: numbers are the report's (formatted in Python) or the store's views; the page only
 * decodes the per-case strings (one character per case: outcome, prediction code, model code, flip) and filters.
 */
"use strict";

window.BELUGA = window.BELUGA || {};
(function (B) {
  B.shards = B.shards || {};
  B.add = function (key, value) { B.shards[key] = value; };

  const PAGE = 100;                       // case rows per page
  const TEXT_PREVIEW = 160;               // characters of a case's text in a list
  const OUTCOMES = { p: "pass", f: "fail", s: "skip", ".": "—" };
  const FLIPS = { n: "negative (pass → fail)", p: "positive (fail → pass)", "=": "no change", s: "skipped", ".": "—" };
  const KIND_ORDER = ["IID", "update", "seen", "held out", "only", "external"];
  const AHEAD = 3;                        // chunks requested ahead of the one a case list filters
  const loading = {};
  const scripts = {};
  let generation = 0;                     // bumped on every route change: stale scans stop

  // -- loading ----------------------------------------------------------------------------------------------------
  function load(key, src) {
    if (B.shards[key] !== undefined) return Promise.resolve(B.shards[key]);
    if (loading[key]) return loading[key];
    loading[key] = new Promise(function (resolve, reject) {
      const s = document.createElement("script");
      s.src = src;
      s.charset = "utf-8";
      s.onload = function () {
        if (B.shards[key] === undefined) reject(new Error("the shard " + src + " did not register " + key));
        else resolve(B.shards[key]);
      };
      s.onerror = function () { delete loading[key]; reject(new Error("could not load " + src)); };
      scripts[key] = s;
      document.head.appendChild(s);
    });
    return loading[key];
  }
  function forget(key) {
    delete B.shards[key];
    delete loading[key];
    if (scripts[key]) { scripts[key].remove(); delete scripts[key]; }
  }
  const site = function () { return B.shards.site; };
  const overview = function (st) { return load("overview/" + st, "data/overview-" + st + ".js"); };
  const suiteShard = function (si) { return load("suite/" + si, "data/suite-" + si + ".js"); };
  const chunkShard = function (si, gi, k) { return load("chunk/" + si + "/" + gi + "/" + k, "data/s" + si + "/g" + gi + "-" + k + ".js"); };
  const probsShard = function (si, gi, k) { return load("probs/" + si + "/" + gi + "/" + k, "data/s" + si + "/p" + gi + "-" + k + ".js"); };
  const textShard = function (si, n) { return load("text/" + si + "/" + n, "data/s" + si + "/t" + n + ".js"); };
  const attrShard = function (si, gi, k) { return load("attr/" + si + "/" + gi + "/" + k, "data/s" + si + "/x" + gi + "-" + k + ".js"); };

  // -- DOM ------------------------------------------------------------------------------------------------------
  function el(tag, attrs) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const k of Object.keys(attrs)) {
        const v = attrs[k];
        if (v === null || v === undefined || v === false) continue;
        if (k === "on") { for (const ev of Object.keys(v)) node.addEventListener(ev, v[ev]); }
        else if (k === "text") node.textContent = String(v);
        else node.setAttribute(k, v === true ? "" : String(v));
      }
    }
    for (let i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function link(text, href, cls) { return el("a", { href: href, class: cls }, text); }
  function enc(x) { return encodeURIComponent(String(x)); }
  function note(text) { return el("p", { class: "note" }, text); }
  function painted(label, node) {
    // What the benchmark and the browser test wait for: the page's first rows are on screen. A page left
    // before it finished (its container is no longer in the document) marks nothing.
    if (node && !node.isConnected) return;
    document.body.setAttribute("data-painted", label);
    if (window.performance && performance.mark) performance.mark("beluga:painted");
  }
  function route(parts, query) {
    const q = query ? Object.keys(query).filter(function (k) { return query[k] !== undefined && query[k] !== null && query[k] !== ""; })
      .map(function (k) { return enc(k) + "=" + enc(query[k]); }).join("&") : "";
    return "#/" + parts.map(enc).join("/") + (q ? "?" + q : "");
  }

  // -- formatting (display only) --------------------------------------------------------------------------------------
  function pctText(v) { return v === null || v === undefined ? "—" : (100 * v).toFixed(1); }
  function labelName(suite, value) {
    if (value === null || value === undefined) return "—";
    const space = suite.label_space;
    const text = String(value);
    const m = /^(not )?(\d+)$/.exec(text);
    if (space && m && Number(m[2]) < space.length) return (m[1] || "") + space[Number(m[2])];
    return text;
  }
  function inputText(inputs) {
    if (inputs === null || inputs === undefined) return "";
    const parts = Array.isArray(inputs) ? inputs : [inputs];
    return parts.map(function (x) {
      if (Array.isArray(x)) return x.map(String).join(" ‖ ");
      if (x !== null && typeof x === "object") return Object.keys(x).map(function (k) { return k + ": " + x[k]; }).join(" ‖ ");
      return String(x);
    }).join("  ¶  ");
  }
  function firstText(c) { const t = inputText(c[3] && Array.isArray(c[3]) ? [c[3][0]] : c[3]); return t || c[0]; }
  function preview(text) {
    return text.length > TEXT_PREVIEW ? text.slice(0, TEXT_PREVIEW) + "… (" + text.length.toLocaleString("en") + " characters)" : text;
  }
  function decode(ch) {
    const cp = ch.charCodeAt(0);
    return cp - 0x30 - (cp >= 0xE000 ? 0x800 : 0);
  }
  function armCase(entry, row) {
    // One arm's facts on one case of a chunk (null where the arm has no outcome on it).
    if (!entry) return null;
    const o = entry.o[row];
    if (o === undefined || o === ".") return null;
    const p = entry.p[row], m = entry.m[row];
    return {
      outcome: o,
      pred: p === " " || !entry.pv ? null : entry.pv[decode(p)],
      model: m === " " || !entry.mv ? null : entry.mv[decode(m)],
      flip: entry.f ? entry.f[row] : ".",
    };
  }
  function badge(o) { return el("span", { class: "badge o-" + o }, OUTCOMES[o] || o); }
  function heatColour(v) {
    // Red → yellow → green, as the report's figures (RdYlGn); grey where nothing was evaluable.
    if (v === null || v === undefined) return "#d9d9d9";
    const stops = [[0, [215, 48, 39]], [0.5, [255, 255, 191]], [1, [26, 152, 80]]];
    const i = v <= 0.5 ? 0 : 1;
    const a = stops[i], b = stops[i + 1], t = (Math.min(Math.max(v, 0), 1) - a[0]) / (b[0] - a[0]);
    const c = a[1].map(function (x, j) { return Math.round(x + t * (b[1][j] - x)); });
    return "rgb(" + c.join(",") + ")";
  }

  // -- generic tables -------------------------------------------------------------------------------------------
  function table(header, rows, numericFrom) {
    const from = numericFrom === undefined ? 99 : numericFrom;
    return el("table", null,
      el("thead", null, el("tr", null, header.map(function (h) { return el("th", null, h); }))),
      el("tbody", null, rows.map(function (r) {
        return el("tr", null, r.map(function (c, i) {
          const cls = i >= from ? "num" : null;
          if (Array.isArray(c)) return el("td", { class: cls }, c[1] ? link(c[0], c[1]) : c[0]);
          return el("td", { class: cls, dir: "auto" }, c === null ? "—" : c);
        }));
      })));
  }
  function section(t) {
    return el("section", null, el("h2", null, t.title), t.note ? note(t.note) : null,
      t.rows.length ? table(t.header, t.rows, t.numeric_from) : note("Nothing to show."));
  }

  // -- navigation -----------------------------------------------------------------------------------------------
  function nav() {
    const n = document.getElementById("nav");
    clear(n);
    const s = site();
    append(n, [link("Overview", "#/"), s.suites.length ? link("Cases", route(["search", 0])) : null,
      s.suites.length ? link("Flips", route(["flips", 0])) : null, link("Cross-suite", "#/align"), link("Ranking", "#/rank")]);
  }
  function storeTabs(st, parts) {
    const s = site();
    if (s.stores.length < 2) return null;
    return el("p", { class: "tabs" }, s.stores.map(function (store, i) {
      return link(store.name, route(parts, { st: i }), i === st ? "active" : null);
    }));
  }

  // -- overview -------------------------------------------------------------------------------------------------
  function table3(t, st) {
    if (!t.rows.length) return note("No finished models yet.");
    const tasks = [];
    t.columns.forEach(function (c) { if (c.task !== null && tasks.indexOf(c.task) < 0) tasks.push(c.task); });
    const head1 = [el("th", { rowspan: 2 }, "configuration"), el("th", { rowspan: 2 }, "method")];
    tasks.forEach(function (task) {
      head1.push(el("th", { colspan: t.columns.filter(function (c) { return c.task === task; }).length }, task));
    });
    const hasAvg = t.columns.some(function (c) { return c.task === null; });
    if (hasAvg) head1.push(el("th", { rowspan: 2 }, t.avg));
    const head2 = t.columns.filter(function (c) { return c.task !== null; }).map(function (c) { return el("th", null, c.label); });
    const body = t.rows.map(function (r, ri) {
      return el("tr", { class: ri === 0 && r.config === "iid" && r.method === "vanilla" ? "baseline" : null },
        el("td", null, r.config), el("td", null, r.method),
        r.cells.map(function (cell, ci) {
          const col = t.columns[ci];
          const text = cell.bold ? el("b", null, cell.t) : cell.t;
          const href = col.g ? route(["scenario", st, col.task, r.config, r.method, cell.from || col.scenario]) : null;
          return el("td", { class: "num" + (cell.mark ? " " + cell.mark : "") }, href ? link(text, href) : text);
        }));
    });
    return el("table", { class: "table3" }, el("thead", null, el("tr", null, head1), el("tr", null, head2)), el("tbody", null, body));
  }

  function heatmap(h, st) {
    const s = site();
    const suite = h.si === null ? null : s.suites[h.si];
    const parents = el("tr", null, el("th", null, ""), el("th", null, ""));
    let spans = [];
    h.parents.forEach(function (p) {
      if (spans.length && spans[spans.length - 1][0] === p) spans[spans.length - 1][1] += 1; else spans.push([p, 1]);
    });
    spans.forEach(function (sp) { append(parents, el("th", { colspan: sp[1], class: "parent", dir: "auto" }, sp[0] || "")); });
    const numbers = el("tr", null, el("th", null, "configuration / method"), el("th", { title: "s_T: the mean over groups" }, "s_T"),
      h.numbers.map(function (num, j) {
        return el("th", { class: "tt tt-" + h.test_types[j], title: h.names[j] + " (" + h.test_types[j] + ")" },
          String(num) + (h.excluded.indexOf(h.names[j]) >= 0 ? "*" : ""));
      }));
    const rows = h.rows.map(function (r) {
      const label = r.config + " / " + r.method + (r.from ? " (" + r.from + (r.on ? ", " + r.on + " cases" : "") + ")" : "");
      return el("tr", null,
        el("th", { class: "rowlabel" }, link(label, route(["scenario", st, h.task, r.config, r.method, r.from || h.scenario]))),
        r.v.map(function (v, j) {
          const text = v === null ? "" : String(Math.round(100 * v));
          const attrs = { class: "cell", style: "background:" + heatColour(v), title: (j === 0 ? "s_T" : h.names[j - 1]) + ": " + pctText(v) };
          if (j === 0 || !suite || h.groups[j - 1] === null) return el("td", attrs, text);
          return el("td", attrs, link(text, route(["group", h.si, h.groups[j - 1]], { arm: r.arm }), "heat"));
        }));
    });
    return el("section", { class: "heatmap" },
      el("h3", null, h.task + " (" + h.suite + ") — scenario " + h.scenario),
      note("Pass rate per " + (h.scoring_level || "scoring group") + " (%); a cell opens the group's cases for that row's models. " +
        "Column numbers are coloured by test type; * an excluded group."),
      el("div", { class: "scroll" }, el("table", { class: "heat" }, el("thead", null, parents, numbers), el("tbody", null, rows))));
  }

  function pageOverview(main, query) {
    const s = site();
    const st = Number(query.get("st") || 0);
    return overview(st).then(function (o) {
      append(main, [el("h1", null, "beluga results: " + o.name), storeTabs(st, []),
        el("p", null, "Store ", el("code", null, o.path), o.variant ? " (variant " + o.variant + ")" : "", ". ",
          o.report ? link("The full report, with every figure", o.report) : null),
        o.status.map(note),
        el("h2", null, o.table3.title), note(o.table3.legend), o.table3.notes.map(note),
        note("A G cell opens its configuration × method × scenario page."),
        table3(o.table3, st)]);
      painted("overview", main);
      if (o.heatmaps.length) append(main, el("h2", null, o.heatmaps_title));
      o.heatmaps.forEach(function (h) { append(main, heatmap(h, st)); });
      (o.figures || []).forEach(function (f) {
        append(main, el("figure", null, el("img", { src: f.src, alt: f.alt, style: "max-width: 100%" }),
          el("figcaption", null, f.caption)));
      });
      o.sections.forEach(function (t) { append(main, section(t)); });
      if (s.suites.length) {
        append(main, el("h2", null, "Suites"), table(["suite", "cases", "groups", ""], s.suites.map(function (x) {
          return [x.name, x.n_cases.toLocaleString("en"), String(x.groups.length), ["search its cases", route(["search", x.si])]];
        }), 1));
      }
    });
  }

  // -- configuration × method × scenario ----------------------------------------------------------------------------
  function pageScenario(main, parts) {
    const st = Number(parts[1]), task = parts[2], config = parts[3], method = parts[4], scenario = parts[5];
    const s = site();
    return overview(st).then(function (o) {
      const summ = o.scenarios.filter(function (r) {
        return r.task === task && r.config === config && r.method === method && r.scenario === scenario;
      });
      append(main, [el("h1", null, config + " / " + method + " · " + scenario),
        el("p", null, "Task " + task + ", store " + o.name + ". ", link("Back to the overview", route([], { st: st }))),
        table(["suite", "G", "s_T", "s_iid", "replicates", "incomplete"], summ.map(function (r) {
          return [r.suite, r.g_t, r.s_suite_t, r.s_iid_t, String(r.n_replicates), String(r.n_incomplete)];
        }), 1)]);
      const seeds = o.seeds.filter(function (r) { return r[0] === task && r[1] === config && r[2] === method && r[3] === scenario; });
      if (seeds.length > 1) append(main, [el("h2", null, "G per seed"), table(["seed", "G"], seeds.map(function (r) { return [String(r[4]), r[5]]; }), 1)]);
      const arms = s.arms.filter(function (a) {
        return a.store === st && a.task === task && a.config === config && a.method === method && a.scenario === scenario;
      });
      const maps = o.heatmaps.filter(function (h) {
        return h.task === task && h.rows.some(function (r) { return r.config === config && r.method === method && (r.from || h.scenario) === scenario; });
      });
      const seenSuites = {};
      const work = maps.filter(function (h) { if (seenSuites[h.suite]) return false; seenSuites[h.suite] = true; return h.si !== null; })
        .map(function (h) {
          return suiteShard(h.si).then(function (sh) {
            const summary = sh.summary.find(function (r) {
              return r.store === st && r.config === config && r.method === method && r.scenario === scenario;
            });
            const row = h.rows.find(function (r) { return r.config === config && r.method === method && (r.from || h.scenario) === scenario; });
            const armParam = row ? row.arm : (arms.length ? arms[0].i : null);
            append(main, [el("h2", null, "Pass rate per group — " + h.suite),
              note("The report's pass rate (mean over replicates) and its 95 % interval where `beluga analyze` stored one. " +
                "A group opens its cases."),
              table(["#", h.scoring_level || "group", "parent", "test type", "pass rate %", "95 % interval", "interval"],
                h.names.map(function (name, j) {
                  const g = summary ? summary.groups[String(h.groups[j])] : null;
                  return [String(h.numbers[j]), [name, route(["group", h.si, h.groups[j]], { arm: armParam })], h.parents[j] || "",
                    h.test_types[j], g ? g.t + (g.excluded ? " (excluded)" : "") : "—",
                    g && g.iv ? "[" + g.iv[0] + ", " + g.iv[1] + "]" + (g.iv[3] !== "current" ? " (" + g.iv[3] + ")" : "") : "—",
                    g && g.iv ? g.iv[2] : ""];
                }), 4)]);
          });
        });
      append(main, [el("h2", null, "Models (arms: one per seed; a held-out arm is its folds)"),
        table(["arm", "model", "seed", "split seed"], arms.map(function (a) {
          return [a.label, a.model_name || "", String(a.seed), String(a.split_seed)];
        }))]);
      painted("scenario", main);
      return Promise.all(work);
    });
  }

  // -- the case lists: group, search and flips pages -------------------------------------------------------------------
  function suiteControls(suite, query, parts, opts) {
    const s = site();
    const arms = suite.arms.map(function (i) { return s.arms[i]; });
    function set(key, value) {
      const q = {};
      query.forEach(function (v, k) { q[k] = v; });
      q[key] = value;
      delete q.page;
      location.hash = route(parts, q);
    }
    function select(key, options, current, label) {
      return el("label", null, label + " ", el("select", { name: key, on: { change: function (e) { set(key, e.target.value); } } },
        options.map(function (o) { return el("option", { value: o[0], selected: String(o[0]) === String(current) }, o[1]); })));
    }
    const armOptions = arms.map(function (a) { return [a.i, a.label]; });
    const types = [];
    suite.groups.forEach(function (g) { if (types.indexOf(g.test_type) < 0 && g.test_type !== "mixed") types.push(g.test_type); });
    const labels = [["", "any"]];
    (suite.label_space || []).forEach(function (name, i) { labels.push([String(i), name]); labels.push(["not " + i, "not " + name]); });
    const form = el("form", { class: "filters", on: { submit: function (e) { e.preventDefault(); set("q", e.target.elements.q.value); } } },
      select(opts.flips ? "a" : "arm", armOptions, opts.flips ? opts.a : opts.arm, opts.flips ? "model A (old)" : "model"),
      opts.flips ? select("b", armOptions, opts.b, "model B (new)") : null,
      opts.flips ? select("dir", [["any", "any change"], ["neg", "pass → fail"], ["pos", "fail → pass"]], opts.dir, "flip") :
        el("label", null, el("input", { type: "checkbox", name: "fail", checked: opts.fail, on: { change: function (e) { set("fail", e.target.checked ? "1" : ""); } } }), " failing only"),
      select("tt", [["", "any"]].concat(types.map(function (t) { return [t, t]; })), opts.tt, "test type"),
      select("label", labels, opts.label, "label"),
      el("label", null, "search ", el("input", { type: "search", name: "q", value: opts.q, placeholder: "words in the case text or id" })),
      el("button", { type: "submit" }, "search"));
    return form;
  }

  function caseList(main, suite, gis, query, parts, opts) {
    const s = site();
    const my = generation;
    const status = note("Loading cases…");
    const tbody = el("tbody", null);
    const armA = s.arms[opts.flips ? opts.a : opts.arm];
    const armB = opts.flips ? s.arms[opts.b] : null;
    const head = ["case", "text", "test type", "gold"];
    if (armA) head.push((opts.flips ? "A: " : "") + armA.label);
    if (armB) head.push("B: " + armB.label);
    const pager = el("p", { class: "pager" });
    append(main, [status, el("div", { class: "scroll" }, el("table", { class: "cases" },
      el("thead", null, el("tr", null, head.map(function (h) { return el("th", null, h); }))), tbody)), pager]);
    const needle = (opts.q || "").toLowerCase();
    const page = Number(opts.page || 0);
    let matched = 0, scanned = 0, neg = 0, pos = 0, shown = false;
    const total = gis.reduce(function (n, gi) { return n + suite.groups[gi].n_cases; }, 0);
    function keep(c, chunk, row) {
      if (opts.tt && c[1] !== opts.tt) return null;
      if (opts.label && String(c[2]) !== opts.label) return null;
      if (needle && (c[0] + " " + inputText(c[3])).toLowerCase().indexOf(needle) < 0) return null;
      const a = armA ? armCase(chunk.arms[armA.i], row) : null;
      let b = null;
      if (opts.flips) {
        b = armB ? armCase(chunk.arms[armB.i], row) : null;
        if (!a || !b || a.outcome === "s" || b.outcome === "s" || a.outcome === b.outcome) return null;
        const negative = a.outcome === "p" && b.outcome === "f";
        if (negative) neg += 1; else pos += 1;
        if ((opts.dir === "neg" && !negative) || (opts.dir === "pos" && negative)) return null;
      } else if (opts.fail && (!a || a.outcome !== "f")) return null;
      return [a, b];
    }
    function caseRow(si, gi, k, row, c, ab) {
      const cells = [el("td", null, link(c[0], route(["case", si, gi, k, row]))),
        el("td", { class: "text", dir: "auto" }, preview(firstText(c))), el("td", null, c[1]), el("td", null, labelName(suite, c[2]))];
      [ab[0], ab[1]].slice(0, armB ? 2 : (armA ? 1 : 0)).forEach(function (x) {
        cells.push(el("td", null, x ? [badge(x.outcome), " ", labelName(suite, x.pred)] : "—"));
      });
      return el("tr", null, cells);
    }
    function update(done) {
      const what = opts.flips ? "changed outcomes (" + neg + " pass → fail, " + pos + " fail → pass)" : "matching cases";
      status.textContent = matched.toLocaleString("en") + " " + what + " among " + scanned.toLocaleString("en") + " of " +
        total.toLocaleString("en") + " cases" + (done ? "." : " (reading…)");
      clear(pager);
      const q = {};
      query.forEach(function (v, k) { q[k] = v; });
      if (page > 0) { q.page = page - 1; append(pager, link("← previous " + PAGE, route(parts, q))); }
      if (matched > (page + 1) * PAGE) { q.page = page + 1; append(pager, [" ", link("next " + PAGE + " →", route(parts, q))]); }
    }
    if (opts.index !== undefined && needle && !opts.fail && !opts.flips) return searchIndex();
    const tasks = [];
    gis.forEach(function (gi) { for (let k = 0; k < suite.groups[gi].chunks; k++) tasks.push([gi, k]); });
    // Chunks are read in order, a few ahead of the one being filtered (the browser loads them side by side); a
    // long scan forgets what it has filtered, so a search over 200,000 cases holds a few chunks at a time.
    const release = tasks.length > 2 * AHEAD;
    let chain = Promise.resolve();
    tasks.forEach(function (t, i) {
      const gi = t[0], k = t[1];
      chain = chain.then(function () {
        if (my !== generation) return;
        for (let j = i + 1; j <= i + AHEAD && j < tasks.length; j++) {
          chunkShard(suite.si, tasks[j][0], tasks[j][1]).catch(function () { /* reported when its turn comes */ });
        }
        return chunkShard(suite.si, gi, k).then(function (chunk) {
          if (my !== generation) return;
          chunk.cases.forEach(function (c, row) {
            const ab = keep(c, chunk, row);
            if (!ab) return;
            if (matched >= page * PAGE && matched < (page + 1) * PAGE) append(tbody, caseRow(suite.si, gi, k, row, c, ab));
            matched += 1;
          });
          scanned += chunk.cases.length;
          if (release) forget("chunk/" + suite.si + "/" + gi + "/" + k);
          if (!shown && (matched >= (page + 1) * PAGE || scanned === total)) { shown = true; painted("cases", main); }
          update(scanned === total);
        });
      });
    });
    return chain.then(function () {
      if (my !== generation) return;
      update(true);
      if (!shown) painted("cases", main);
    });

    function searchIndex() {
      // A text search over a whole suite reads the search index (the cases without outcomes), then each shown
      // row's chunk for the chosen model's outcome.
      let chainT = Promise.resolve();
      for (let n = 0; n < opts.index; n++) {
        chainT = chainT.then(function () {
          if (my !== generation) return;
          for (let j = n + 1; j <= n + AHEAD && j < opts.index; j++) textShard(suite.si, j).catch(function () { /* later */ });
          return textShard(suite.si, n).then(function (rows) {
            if (my !== generation) return;
            rows.forEach(function (r) {
              const c = [r[3], r[4], r[5], r[6]];
              if (!keep(c, { arms: {} }, r[2])) return;
              if (matched >= page * PAGE && matched < (page + 1) * PAGE) {
                const tr = caseRow(suite.si, r[0], r[1], r[2], c, [null, null]);
                append(tbody, tr);
                if (armA) {
                  chunkShard(suite.si, r[0], r[1]).then(function (chunk) {
                    const x = armCase(chunk.arms[armA.i], r[2]);
                    const td = tr.cells[tr.cells.length - 1];
                    clear(td);
                    append(td, x ? [badge(x.outcome), " ", labelName(suite, x.pred)] : "—");
                  });
                }
              }
              matched += 1;
            });
            scanned += rows.length;
            forget("text/" + suite.si + "/" + n);
            if (!shown && (matched >= (page + 1) * PAGE || scanned === total)) { shown = true; painted("cases", main); }
            update(scanned === total);
          });
        });
      }
      return chainT.then(function () {
        if (my !== generation) return;
        update(true);
        if (!shown) painted("cases", main);
      });
    }
  }

  function listOpts(query, suite, fallbackArm) {
    const valid = function (x) { return x !== null && x !== "" && !isNaN(Number(x)) && suite.arms.indexOf(Number(x)) >= 0; };
    const arm = query.get("arm");
    return {
      arm: valid(arm) ? Number(arm) : fallbackArm,
      fail: query.get("fail") === "1", tt: query.get("tt") || "", label: query.get("label") || "", q: query.get("q") || "",
      page: query.get("page") || 0,
      a: valid(query.get("a")) ? Number(query.get("a")) : suite.arms[0],
      b: valid(query.get("b")) ? Number(query.get("b")) : suite.arms[Math.min(1, suite.arms.length - 1)],
      dir: query.get("dir") || "any",
      flips: false,
    };
  }

  function pageGroup(main, parts, query) {
    const s = site();
    const si = Number(parts[1]), gi = Number(parts[2]);
    const suite = s.suites[si];
    const g = suite && suite.groups[gi];
    if (!g) { append(main, note("No such group.")); painted("missing", main); return Promise.resolve(); }
    return suiteShard(si).then(function (sh) {
      const opts = listOpts(query, suite, suite.arms[0]);
      append(main, [el("h1", { dir: "auto" }, g.name),
        el("p", null, "Suite " + suite.name + " · " + (suite.scoring_level || "group") + " #" + g.number +
          (g.parent ? " · " + (suite.parent_level || "parent") + " " + g.parent : "") + " · test type " + g.test_type + " · " +
          g.n_cases.toLocaleString("en") + " evaluated cases")]);
      const rows = sh.summary.filter(function (r) { return r.groups[String(gi)]; }).map(function (r) {
        const x = r.groups[String(gi)];
        return [s.stores.length > 1 ? s.stores[r.store].name : null, r.config, r.method,
          [r.scenario, route(["scenario", r.store, r.task, r.config, r.method, r.scenario])],
          x.t + (x.excluded ? " (excluded)" : ""), x.iv ? "[" + x.iv[0] + ", " + x.iv[1] + "]" : "—", x.iv ? x.iv[2] : "", String(x.n_replicates)];
      }).map(function (r) { return s.stores.length > 1 ? r : r.slice(1); });
      const head = ["configuration", "method", "scenario", "pass rate %", "95 % interval", "interval", "replicates"];
      append(main, [el("h2", null, "Pass rate"), note("The report's pass rate of the group (mean over replicates), with the interval " +
        "`beluga analyze` stored (over seeds, then cases; with 2–4 seeds the seed-level t, as the interval column says)."), table(s.stores.length > 1 ? ["store"].concat(head) : head, rows, s.stores.length > 1 ? 4 : 3)]);
      const perArm = sh.pass_rates.filter(function (r) { return r[1] === gi; }).map(function (r) {
        return [[s.arms[r[0]].label, route(parts, { arm: r[0], fail: "1" })], String(r[2]), String(r[3]), String(r[4]), pctText(r[5])];
      });
      append(main, [el("h2", null, "Per arm"), note("The pass_rates view: one row per scenario key (a seed of a configuration-method-scenario). " +
        "An arm opens its failing cases below."), table(["arm", "pass", "fail", "skip", "pass rate %"], perArm, 1),
      el("h2", null, "Cases"), suiteControls(suite, query, parts, opts)]);
      return caseList(main, suite, [gi], query, parts, opts);
    });
  }

  function pageSearch(main, parts, query) {
    const s = site();
    const si = Number(parts[1]);
    const suite = s.suites[si];
    if (!suite) { append(main, note("No such suite.")); painted("missing", main); return Promise.resolve(); }
    const opts = listOpts(query, suite, suite.arms[0]);
    append(main, [el("h1", null, "Cases of " + suite.name), suiteSwitch(si, "search"),
      note("Every evaluated case, group by group; the filters apply to the chosen model's outcome."),
      suiteControls(suite, query, parts, opts)]);
    return suiteShard(si).then(function (sh) {
      opts.index = sh.text_shards;
      return caseList(main, suite, suite.groups.map(function (g) { return g.gi; }), query, parts, opts);
    });
  }

  function pageFlips(main, parts, query) {
    const s = site();
    const si = Number(parts[1]);
    const suite = s.suites[si];
    if (!suite) { append(main, note("No such suite.")); painted("missing", main); return Promise.resolve(); }
    const opts = listOpts(query, suite, suite.arms[0]);
    opts.flips = true;
    append(main, [el("h1", null, "Flips between two models — " + suite.name), suiteSwitch(si, "flips"),
      note("The cases on which model B's outcome differs from model A's (skips left out), in any two models of the site " +
        "(with --compare, of either store). The store's regression views give each model against its own old model: " +
        "the overview's regression table."),
      suiteControls(suite, query, parts, opts)]);
    return caseList(main, suite, suite.groups.map(function (g) { return g.gi; }), query, parts, opts);
  }

  function suiteSwitch(si, page) {
    const s = site();
    if (s.suites.length < 2) return null;
    return el("p", { class: "tabs" }, s.suites.map(function (x) { return link(x.name, route([page, x.si]), x.si === si ? "active" : null); }));
  }

  // -- a case -------------------------------------------------------------------------------------------------------
  function shade(words) {
    let max = 0;
    words.forEach(function (w) { max = Math.max(max, Math.abs(w[1])); });
    return el("span", { class: "attr", dir: "auto" }, words.map(function (w) {
      const a = max > 0 ? Math.abs(w[1]) / max : 0;
      const colour = w[1] >= 0 ? "rgba(26,152,80," + (0.75 * a).toFixed(3) + ")" : "rgba(215,48,39," + (0.75 * a).toFixed(3) + ")";
      return [el("span", { class: "word" + (w[2] ? " special" : ""), style: "background:" + colour, title: "score " + w[1] }, w[0]), " "];
    }));
  }
  function probsText(suite, value) {
    if (!Array.isArray(value)) return String(value);
    return value.map(function (p, i) { return labelName(suite, String(i)) + " " + p.toFixed(3); }).join(" · ");
  }

  function pageCase(main, parts) {
    const s = site();
    const si = Number(parts[1]), gi = Number(parts[2]), k = Number(parts[3]), row = Number(parts[4]);
    const suite = s.suites[si];
    const g = suite && suite.groups[gi];
    if (!g || !(k < g.chunks)) { append(main, note("No such case.")); painted("missing", main); return Promise.resolve(); }
    return Promise.all([chunkShard(si, gi, k), suiteShard(si)]).then(function (got) {
      const chunk = got[0], sh = got[1];
      const c = chunk.cases[row];
      if (!c) { append(main, note("No such case.")); painted("missing", main); return; }
      const flags = sh.extras[gi + "-" + k] || "";
      append(main, [el("h1", { dir: "auto" }, c[0]),
        el("p", null, "Suite " + suite.name + " · group ", link(g.name, route(["group", si, gi])),
          g.parent ? " (" + g.parent + ")" : "", " · test type " + c[1] + " · gold " + labelName(suite, c[2]) +
          (c[4] !== null && c[4] !== undefined ? " · label " + labelName(suite, String(c[4])) : ""))]);
      const inputs = c[3] === null || c[3] === undefined ? [] : (Array.isArray(c[3]) ? c[3] : [c[3]]);
      append(main, el("h2", null, "Inputs"));
      if (!inputs.length) append(main, note("The store keeps no definition of this case (case_specs)."));
      inputs.forEach(function (x, i) {
        const text = typeof x === "string" ? x : JSON.stringify(x, null, 1);
        append(main, el("div", { class: "input" }, el("span", { class: "idx" }, "input " + i + (text.length > 1000 ? " · " + text.length.toLocaleString("en") + " characters" : "")),
          el("div", { class: "text full", dir: "auto" }, text)));
      });
      if (c[5]) append(main, [el("h2", null, "Expectation"), el("pre", null, JSON.stringify(c[5], null, 1))]);
      const armsHere = suite.arms.map(function (i) { return [s.arms[i], armCase(chunk.arms[i], row)]; })
        .filter(function (x) { return x[1]; });
      armsHere.sort(function (x, y) { return KIND_ORDER.indexOf(x[0].kind) - KIND_ORDER.indexOf(y[0].kind) || x[0].i - y[0].i; });
      const probs = flags.indexOf("p") >= 0 ? probsShard(si, gi, k) : Promise.resolve(null);
      const attrs = flags.indexOf("x") >= 0 ? attrShard(si, gi, k) : Promise.resolve(null);
      return Promise.all([probs, attrs]).then(function (extra) {
        const p = extra[0] && extra[0][String(row)], x = extra[1] && extra[1][String(row)];
        const head = ["kind", "model", "the model (fold)", "outcome", "prediction", "flip vs its old model"];
        if (p) head.push("probabilities (a span model: its answer) per input");
        if (x) head.push("stored attributions");
        const body = armsHere.map(function (ax) {
          const a = ax[0], f = ax[1];
          const cells = [el("td", null, a.kind), el("td", null, a.label),
            el("td", { class: "mono" }, f.model ? [f.model[0], f.model[1] ? el("div", { class: "note" }, "fold holding out " + f.model[1]) : null] : "—"),
            el("td", null, badge(f.outcome)), el("td", null, labelName(suite, f.pred)), el("td", null, FLIPS[f.flip] || f.flip)];
          if (p) cells.push(el("td", null, (p[String(a.i)] || []).map(function (q) { return el("div", null, "input " + q[0] + ": " + probsText(suite, q[1])); })));
          if (x) cells.push(el("td", null, (x[String(a.i)] || []).map(function (q) {
            return el("div", null, el("span", { class: "note" }, "input " + q[0] + " · " + q[1] + " → " + labelName(suite, q[2]) + ": "), shade(q[3]));
          })));
          return el("tr", null, cells);
        });
        append(main, [el("h2", null, "Every model on this case"),
          note("IID: the i.i.d. baseline; update: another configuration scored like it; seen: trained on the suite's T_train; " +
            "held out: the fold that held this case's group out; only: trained on one group alone; external: a model " +
            "checked with `beluga suite check --store`. Attributions: green pushes towards the class named, red away."),
          el("div", { class: "scroll" }, el("table", { class: "models" }, el("thead", null, el("tr", null, head.map(function (h) { return el("th", null, h); }))),
            el("tbody", null, body)))]);
        painted("case", main);
      });
    });
  }

  // -- cross-suite and ranking ------------------------------------------------------------------------------------
  function pageTables(main, query, key, title, empty) {
    const st = Number(query.get("st") || 0);
    return overview(st).then(function (o) {
      append(main, [el("h1", null, title + ": " + o.name), storeTabs(st, [key])]);
      if (!o[key === "align" ? "alignment" : "ranking"].length) append(main, note(empty));
      o[key === "align" ? "alignment" : "ranking"].forEach(function (t) { append(main, section(t)); });
      painted(key, main);
    });
  }

  // -- routing ----------------------------------------------------------------------------------------------------
  function render() {
    generation += 1;
    const root = document.getElementById("main");
    clear(root);
    // Each page draws into a container of its own: one still loading when the route changes draws off-screen.
    const main = el("div", { class: "page" });
    root.appendChild(main);
    document.body.removeAttribute("data-painted");
    const hash = location.hash.replace(/^#\/?/, "");
    const cut = hash.indexOf("?");
    const path = cut >= 0 ? hash.slice(0, cut) : hash;
    const query = new URLSearchParams(cut >= 0 ? hash.slice(cut + 1) : "");
    const parts = path ? path.split("/").map(decodeURIComponent) : [];
    let work;
    switch (parts[0] || "") {
      case "": work = pageOverview(main, query); break;
      case "scenario": work = pageScenario(main, parts); break;
      case "group": work = pageGroup(main, parts, query); break;
      case "case": work = pageCase(main, parts); break;
      case "search": work = pageSearch(main, parts, query); break;
      case "flips": work = pageFlips(main, parts, query); break;
      case "align": work = pageTables(main, query, "align", "Cross-suite evaluation and alignment", "This store has no cross-suite evaluation (eval_suites)."); break;
      case "rank": work = pageTables(main, query, "rank", "Ranking results", "This store holds no ranking (`beluga rank`)."); break;
      default: append(main, note("No such page.")); painted("missing", main); work = Promise.resolve();
    }
    work.catch(function (err) {
      if (!main.isConnected) return;
      append(main, el("p", { class: "error" }, "Could not show this page: " + err.message));
      painted("error", main);
    });
  }

  function start() {
    if (!site()) {
      const main = document.getElementById("main");
      clear(main);
      append(main, el("p", { class: "error" }, "data/site.js is missing: open the index.html that `beluga report --format site` wrote."));
      return;
    }
    document.title = "beluga: " + site().title;
    nav();
    window.addEventListener("hashchange", render);
    render();
  }
  B.start = start;
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})(window.BELUGA);
