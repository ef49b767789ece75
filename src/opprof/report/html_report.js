// opprof HTML report: draws the page from the JSON blob in the element with id opprof-data, with Chart.js.
// Every figure comes from the blob; the page computes nothing but shares and formatting. Tables carry
// each cell's raw value in data-value (the browser test compares those and the shown text with the
// database), and every chart is registered in window.opprofCharts by its canvas id.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('opprof-data').textContent);
  const charts = {};
  window.opprofCharts = charts;
  const kernelTime = data.coverage.kernel_time_ns;
  Chart.defaults.animation = false;  // drawn at once: screenshots and tests see the final chart
  Chart.defaults.maintainAspectRatio = false;
  Chart.defaults.font.size = 12;
  const palette = ['#2f6fd6', '#e8793a', '#3aa757', '#c94a8f', '#8a63d2', '#d4a72c', '#36a2b5', '#8c8c8c'];

  // ---- formatting ----
  const isNum = (v) => typeof v === 'number' && isFinite(v);
  function fmtTime(ns) {
    if (!isNum(ns)) return '';
    const a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(3) + ' us';
    return ns.toFixed(0) + ' ns';
  }
  function fmtPct(share) { return isNum(share) ? (100 * share).toFixed(1) + ' %' : ''; }
  function fmtFixed(digits) { return (v) => (isNum(v) ? v.toFixed(digits) : ''); }
  function fmtSi(unit) {
    return (v) => {
      if (!isNum(v)) return '';
      const steps = [[1e15, 'P'], [1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
      for (const [f, p] of steps) if (Math.abs(v) >= f) return (v / f).toFixed(2) + ' ' + p + unit;
      return v.toFixed(2) + ' ' + unit;
    };
  }
  const fmtInt = (v) => (isNum(v) ? String(v) : '');
  const fmtText = (v) => (v === null || v === undefined ? '' : String(v));
  const share = (ns) => (kernelTime > 0 ? ns / kernelTime : 0);

  // ---- DOM helpers ----
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v;
      else if (k === 'text') e.textContent = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }
  const app = document.getElementById('app');
  app.textContent = '';
  function section(id, title, note) {
    const s = el('section', { id: id }, el('h2', { text: title }));
    if (note) s.append(el('p', { class: 'note', text: note }));
    main.append(s);
    return s;
  }
  function chartBox(parent, id, size) {
    const canvas = el('canvas', { id: id });
    parent.append(el('div', { class: 'chart' + (size ? ' ' + size : '') }, canvas));
    return canvas;
  }

  // A sortable table. columns: {key, label, fmt, num, cls, value(row)}; rows: objects. Clicking a header
  // sorts by that column (numbers descending first).
  function table(parent, id, columns, rows) {
    const t = el('table', { id: id });
    const head = el('tr');
    const body = el('tbody');
    const valueOf = (c, r) => (c.value ? c.value(r) : r[c.key]);
    let sortCol = -1, asc = false;
    function fill() {
      body.textContent = '';
      for (const r of rows) {
        const tr = el('tr', { 'data-key': fmtText(r.key !== undefined ? r.key : r.name) });
        for (const c of columns) {
          const v = valueOf(c, r);
          const td = el('td', { class: (c.num ? 'num ' : '') + (c.cls || ''), 'data-col': c.key });
          if (v !== null && v !== undefined) td.setAttribute('data-value', String(v));
          td.textContent = (c.fmt || fmtText)(v, r);
          tr.append(td);
        }
        body.append(tr);
      }
    }
    columns.forEach((c, i) => {
      const th = el('th', { class: c.num ? 'num' : '', text: c.label, 'data-col': c.key });
      th.addEventListener('click', () => {
        asc = sortCol === i ? !asc : !c.num;
        sortCol = i;
        rows.sort((a, b) => {
          const x = valueOf(c, a), y = valueOf(c, b);
          const nx = x === null || x === undefined, ny = y === null || y === undefined;
          if (nx || ny) return nx === ny ? 0 : nx ? 1 : -1;  // unknowns last
          const d = typeof x === 'number' ? x - y : String(x).localeCompare(String(y));
          return asc ? d : -d;
        });
        head.querySelectorAll('th').forEach((h) => h.classList.remove('sorted-asc', 'sorted-desc'));
        th.classList.add(asc ? 'sorted-asc' : 'sorted-desc');
        fill();
      });
      head.append(th);
    });
    t.append(el('thead', {}, head), body);
    fill();
    parent.append(el('div', { class: 'scroll' }, t));
    return t;
  }

  function barChart(canvas, labels, values, label, horizontal, title) {
    charts[canvas.id] = new Chart(canvas, {
      type: 'bar',
      data: { labels: labels, datasets: [{ label: label, data: values, backgroundColor: palette[0] }] },
      options: {
        indexAxis: horizontal ? 'y' : 'x',
        plugins: { legend: { display: false }, title: { display: !!title, text: title || '' },
          tooltip: { callbacks: { label: (c) => label + ': ' + c.formattedValue } } },
        scales: horizontal ? { y: { ticks: { autoSkip: false, callback: function (v) { return shorten(this.getLabelForValue(v), 42); } } } } : {},
      },
    });
  }
  // Long names cut in the middle, so that two names that share a prefix stay apart.
  function shorten(s, n) {
    s = String(s);
    if (s.length <= n) return s;
    const h = Math.floor((n - 3) / 2);
    return s.slice(0, h) + '...' + s.slice(s.length - (n - 3 - h));
  }
  const ms = (ns) => ns / 1e6;

  // ---- the page ----
  const header = el('header', {}, el('h1', { text: 'opprof report' }),
    el('div', { class: 'sub', text: data.profile + ' \u00b7 schema ' + data.schema_version + ' \u00b7 opprof ' + data.opprof_version }));
  if (data.warnings.length) {
    const ul = el('ul');
    for (const w of data.warnings) ul.append(el('li', { text: w }));
    header.append(el('div', { class: 'warnings', id: 'warnings' }, el('strong', { text: 'Warnings' }), ul));
  }
  const nav = el('nav');
  const sections = [['coverage', 'Coverage'], ...(data.job ? [['ranks', 'Ranks']] : []), ['roofline', 'Roofline'],
    ['operators', 'Operators'], ['modules', 'Modules'], ['families', 'Kernel families'], ['kernels', 'Kernels'],
    ['unattributed', 'Unattributed'], ['capture', 'Capture']];
  for (const [id, t] of sections) nav.append(el('a', { href: '#' + id, text: t }));
  const main = el('main');
  app.append(header, nav, main);

  // Coverage.
  const cov = data.coverage;
  {
    const s = section('coverage', 'Coverage', 'How much of the kernel time attribution explained, by the evidence it used and by training phase.');
    const cards = el('div', { class: 'cards' });
    const card = (id, v, l) => cards.append(el('div', { class: 'card', id: id }, el('div', { class: 'v', text: v }), el('div', { class: 'l', text: l })));
    card('card-kernel-time', fmtTime(cov.kernel_time_ns), 'kernel time');
    card('card-kernels', fmtInt(cov.kernels), 'kernels');
    card('card-attributed', fmtPct(share(cov.attributed_ns)), 'with an operator');
    card('card-module', fmtPct(share(cov.module_attributed_ns)), 'with a module');
    card('card-opaque', fmtPct(share(cov.opaque_ns)), 'inside opaque backends');
    if (cov.ncu.available) card('card-ncu', cov.ncu.matched + ' / ' + cov.ncu.rows, 'ncu rows matched');
    s.append(cards);
    const row = el('div', { class: 'charts' });
    s.append(row);
    barChart(chartBox(row, 'chart-paths', 'short'), cov.paths.map((p) => p.name), cov.paths.map((p) => 100 * share(p.ns)), '% of kernel time', false,
      '% of kernel time by attribution path');
    barChart(chartBox(row, 'chart-phases', 'short'), cov.phases.map((p) => p.name), cov.phases.map((p) => 100 * share(p.ns)), '% of kernel time', false,
      '% of kernel time by phase');
    const rows = cov.paths.map((p) => ({ key: 'path: ' + p.name, ns: p.ns })).concat(cov.phases.map((p) => ({ key: 'phase: ' + p.name, ns: p.ns })));
    table(s, 'table-coverage', [
      { key: 'key', label: 'part' },
      { key: 'ns', label: 'time', num: true, fmt: fmtTime },
      { key: 'share', label: '% of kernel time', num: true, fmt: fmtPct, value: (r) => share(r.ns) },
    ], rows);
  }

  // Ranks of a multi-process job: each rank's kernel time, its communication on the GPU (NCCL kernels and the
  // copies inside collectives, as a union) and how much computation hid, the collectives' CPU time, the
  // collectives the trace described, and the operators whose time differs most between ranks.
  if (data.job) {
    const job = data.job;
    const s = section('ranks', 'Ranks',
      'One row per process that ran GPU work. GPU communication is the union of NCCL kernels and the copies inside collectives; ' +
      'overlap is the part of it during which a computation kernel of the same process ran; CPU communication is the union of the ' +
      'collectives\' CPU ranges (gloo reduces on the CPU). Shares are parts over a whole that holds them.');
    const label = (p) => (p.rank !== null ? 'rank ' + p.rank : 'pid ' + p.pid);
    const withFigures = job.processes.filter((p) => isNum(p.kernel_time_ns));
    const cards = el('div', { class: 'cards' });
    const card = (id, v, l) => cards.append(el('div', { class: 'card', id: id }, el('div', { class: 'v', text: v }), el('div', { class: 'l', text: l })));
    card('card-ranks', fmtInt(job.processes.length), 'ranks');
    card('card-communication', fmtPct(job.communication_share), 'of GPU busy time communicating');
    card('card-overlapped', fmtPct(job.overlapped_share), 'of it hidden by computation');
    card('card-cpu-communication', fmtPct(job.cpu_communication_share), 'of the wall span in collectives on the CPU');
    card('card-imbalance', fmtFixed(2)(job.max_time_vs_mean) + 'x', 'slowest rank\'s kernel time vs the mean');
    s.append(cards);
    const row = el('div', { class: 'charts' });
    s.append(row);
    const canvas = chartBox(row, 'chart-ranks', 'short');
    const series = [['kernel time', 'kernel_time_ns'], ['GPU communication', 'communication_ns'],
      ['exposed GPU communication', 'exposed_communication_ns'], ['CPU communication', 'cpu_communication_ns']];
    charts[canvas.id] = new Chart(canvas, {
      type: 'bar',
      data: { labels: withFigures.map(label),
        datasets: series.map(([name, key], i) => ({ label: name, data: withFigures.map((p) => ms(p[key])), backgroundColor: palette[i] })) },
      options: { plugins: { title: { display: true, text: 'per rank (ms)' },
        tooltip: { callbacks: { label: (c) => c.dataset.label + ': ' + c.formattedValue + ' ms' } } } },
    });
    table(s, 'table-ranks', [
      { key: 'name', label: 'rank', cls: 'name' },
      { key: 'pid', label: 'pid', num: true, fmt: fmtInt },
      { key: 'status', label: 'status' },
      { key: 'kernels', label: 'kernels', num: true, fmt: fmtInt },
      { key: 'kernel_time_ns', label: 'kernel time', num: true, fmt: fmtTime },
      { key: 'time_vs_mean', label: 'vs mean', num: true, fmt: fmtFixed(2) },
      { key: 'compute_ns', label: 'computation', num: true, fmt: fmtTime },
      { key: 'communication_ns', label: 'GPU comm', num: true, fmt: fmtTime },
      { key: 'overlapped', label: '% hidden', num: true, fmt: fmtPct,
        value: (r) => (isNum(r.communication_ns) && r.communication_ns > 0 ? r.overlap_ns / r.communication_ns : null) },
      { key: 'exposed_communication_ns', label: 'exposed', num: true, fmt: fmtTime },
      { key: 'communication_kernel_ns', label: 'NCCL kernels', num: true, fmt: fmtTime },
      { key: 'communication_copy_ns', label: 'copies in collectives', num: true, fmt: fmtTime },
      { key: 'cpu_communication_ns', label: 'CPU comm', num: true, fmt: fmtTime },
      { key: 'span_ns', label: 'wall span', num: true, fmt: fmtTime },
      { key: 'problem', label: 'problem', cls: 'why', fmt: fmtText },
    ], job.processes.map((p) => Object.assign({ key: label(p), name: label(p) }, p)));
    if (job.idle_processes.length)
      s.append(el('p', { class: 'note', id: 'ranks-idle', text: 'Not ranks (no GPU activity): ' +
        job.idle_processes.map((p) => 'pid ' + p.pid + (p.folder ? ' (' + p.folder + ')' : '')).join(', ') + '.' }));
    if (job.collective_messages.length) {
      s.append(el('h3', { text: 'Collectives whose tensors the trace recorded' }));
      table(s, 'table-collectives', [
        { key: 'rank', label: 'rank', fmt: fmtText },
        { key: 'collective', label: 'collective', fmt: fmtText },
        { key: 'count', label: 'count', num: true, fmt: fmtInt },
        { key: 'elements', label: 'elements', num: true, fmt: fmtInt },
        { key: 'bytes', label: 'bytes', num: true, fmt: fmtSi('B') },
        { key: 'dtype', label: 'dtype', fmt: fmtText },
        { key: 'group', label: 'process group', fmt: fmtText,
          value: (r) => (r.process_group === null ? null : r.process_group + (r.process_group_desc ? ' (' + r.process_group_desc + ')' : '')) },
        { key: 'group_size', label: 'group size', num: true, fmt: fmtInt },
      ], job.collective_messages.map((m, i) => Object.assign({ key: String(i) }, m)));
    }
    const unequal = job.most_unequal_operators.filter((u) => u.spread_ns > 0);
    if (unequal.length) {
      s.append(el('h3', { text: 'Operators whose time differs most between ranks' }));
      const cols = [{ key: 'operator', label: 'operator', cls: 'name' }, { key: 'spread_ns', label: 'spread', num: true, fmt: fmtTime }];
      for (const p of withFigures)
        cols.push({ key: 'process_' + p.id, label: label(p), num: true, fmt: fmtTime, value: (r) => r.time_ns_by_process[String(p.id)] || 0 });
      table(s, 'table-rank-operators', cols, unequal.map((u) => Object.assign({ key: u.operator }, u)));
    }
  }

  // Rooflines: achieved FLOP/s (tensor and FP32 separately) against arithmetic intensity, under the GPU's ceilings.
  {
    const c = data.ceilings;
    const gpu = (data.capture.find((f) => f[0] === 'GPU') || [null, 'an unknown GPU'])[1];
    const s = section('roofline', 'Roofline',
      'Achieved GFLOP/s of each operator and kernel that ncu measured, tensor-core and FP32 CUDA-core work as separate points, against ' +
      'arithmetic intensity (all FLOPs per DRAM byte). ' +
      (c ? 'Ceilings: ' + c.device + ', ' + c.source + ' (peak at the boost clock; unlocked clocks move the points).'
        : 'No ceilings: the catalog (data/gpu_ceilings.tsv) has no entry for ' + gpu + '.'));
    const row = el('div', { class: 'charts' });
    s.append(row);
    const withFlops = (rows) => rows.filter((r) => isNum(r.arithmetic_intensity) && r.arithmetic_intensity > 0 &&
      ((isNum(r.tensor_gflops) && r.tensor_gflops > 0) || (isNum(r.fp32_gflops) && r.fp32_gflops > 0)));
    const ops = withFlops(data.operators), kernels = withFlops(data.kernels);
    if (!ops.length && !kernels.length) s.append(el('p', { class: 'note', id: 'roofline-empty', text: 'The profile has no FLOP counters (no ncu pass, or a metric set without them): nothing to place on a roofline.' }));
    else {
      roofline(chartBox(row, 'chart-roofline-operators', 'tall'), 'Operators', ops, (r) => r.name, c);
      roofline(chartBox(row, 'chart-roofline-kernels', 'tall'), 'Kernels', kernels, (r) => r.name, c);
    }
  }
  // Columns of a group table (operators, modules, families).
  function groupColumns(nameLabel, withFused) {
    const cols = [
      { key: 'name', label: nameLabel, cls: 'name' },
      { key: 'kernels', label: 'kernels', num: true, fmt: fmtInt },
      { key: 'time_ns', label: 'time', num: true, fmt: fmtTime },
      { key: 'time_pct', label: '% time', num: true, fmt: fmtFixed(1) },
      { key: 'bottleneck', label: 'bottleneck', fmt: fmtText },
      { key: 'dram_gbps', label: 'DRAM GB/s', num: true, fmt: fmtFixed(1) },
      { key: 'tensor_gflops', label: 'tensor GFLOP/s', num: true, fmt: fmtFixed(1) },
      { key: 'fp32_gflops', label: 'FP32 GFLOP/s', num: true, fmt: fmtFixed(1) },
      { key: 'arithmetic_intensity', label: 'FLOP/byte', num: true, fmt: fmtFixed(2) },
      { key: 'bottleneck_why', label: 'the figures behind the class', cls: 'why', fmt: fmtText },
    ];
    if (withFused) cols.splice(1, 0, { key: 'fused_ops', label: 'fused ops', cls: 'name', fmt: fmtText });
    return cols;
  }
  function groupSection(id, title, note, groups, nameLabel, withFused) {
    const s = section(id, title, note);
    const top = groups.slice(0, 20);
    const row = el('div', { class: 'charts' });
    s.append(row);
    barChart(chartBox(row, 'chart-' + id, 'tall'), top.map((g) => g.name), top.map((g) => ms(g.time_ns)), 'ms', true,
      'kernel time (ms), largest ' + top.length);
    table(s, 'table-' + id, groupColumns(nameLabel, withFused), groups.slice());
    return s;
  }
  groupSection('operators', 'Time by operator', 'Kernel time per operator (the innermost ATen operator, or the Inductor kernel\'s launcher), its bottleneck class and the counters that decided it. Click a column to sort.',
    data.operators, 'operator', true);

  // Modules: the tree with inclusive and self time (collapsible), and the module paths as attributed.
  {
    const s = section('modules', 'Time by module', 'Inclusive time holds the module and everything below it; self time only the kernels attributed to that path. Click \u25B8 to open a module.');
    const tree = data.module_tree;
    const row = el('div', { class: 'charts' });
    s.append(row);
    const flat = [];
    (function walk(nodes, depth, parent) {
      for (const n of nodes) {
        flat.push({ node: n, depth: depth, parent: parent });
        walk(n.children, depth + 1, n.path);
      }
    })(tree.roots, 0, null);
    const topLevel = flat.filter((f) => f.depth <= 1).sort((a, b) => b.node.inclusive_ns - a.node.inclusive_ns).slice(0, 20);
    barChart(chartBox(row, 'chart-modules', 'tall'), topLevel.map((f) => f.node.path), topLevel.map((f) => ms(f.node.inclusive_ns)), 'inclusive ms', true,
      'inclusive kernel time (ms) of the top two levels');
    const t = el('table', { id: 'table-module-tree' });
    const cols = ['module', 'inclusive', '% incl.', 'self', 'kernels (incl.)', 'bottleneck (self)'];
    t.append(el('thead', {}, el('tr', {}, ...cols.map((c, i) => el('th', { class: i ? 'num' : '', text: c })))));
    const body = el('tbody');
    const rowsByParent = {};
    for (const f of flat) {
      const n = f.node;
      const hasKids = n.children.length > 0;
      const toggle = el('span', { class: 'toggle', text: hasKids ? '\u25B8' : '' });
      const nameCell = el('td', { class: 'name', 'data-col': 'path', 'data-value': n.path, style: 'padding-left:' + (8 + 16 * f.depth) + 'px' }, toggle, n.name);
      const tr = el('tr', { 'data-key': n.path, 'data-depth': String(f.depth) }, nameCell,
        el('td', { class: 'num', 'data-col': 'inclusive_ns', 'data-value': String(n.inclusive_ns), text: fmtTime(n.inclusive_ns) }),
        el('td', { class: 'num', 'data-col': 'inclusive_share', text: fmtPct(share(n.inclusive_ns)) }),
        el('td', { class: 'num', 'data-col': 'self_ns', 'data-value': String(n.self_ns), text: fmtTime(n.self_ns) }),
        el('td', { class: 'num', 'data-col': 'inclusive_kernels', 'data-value': String(n.inclusive_kernels), text: fmtInt(n.inclusive_kernels) }),
        el('td', { 'data-col': 'bottleneck', title: n.bottleneck_why || '', text: n.bottleneck || '' }));
      if (f.depth > 0) tr.style.display = 'none';
      (rowsByParent[f.parent] = rowsByParent[f.parent] || []).push(tr);
      if (hasKids) {
        toggle.addEventListener('click', () => {
          const open = toggle.textContent === '\u25BE';
          toggle.textContent = open ? '\u25B8' : '\u25BE';
          (function show(path, visible) {
            for (const child of rowsByParent[path] || []) {
              child.style.display = visible ? '' : 'none';
              const t2 = child.querySelector('.toggle');
              // Closing hides every level below; opening shows the children, closed.
              if (!visible && t2 && t2.textContent === '\u25BE') t2.textContent = '\u25B8';
              if (!visible) show(child.getAttribute('data-key'), false);
            }
          })(n.path, !open);
        });
      }
      body.append(tr);
    }
    if (tree.no_module_kernels > 0) {
      body.append(el('tr', { 'data-key': '[no module]' }, el('td', { class: 'name', text: '[no module] (kernel time without a module path)' }),
        el('td', { class: 'num', 'data-col': 'inclusive_ns', 'data-value': String(tree.no_module_ns), text: fmtTime(tree.no_module_ns) }),
        el('td', { class: 'num', text: fmtPct(share(tree.no_module_ns)) }), el('td', { class: 'num', text: '' }),
        el('td', { class: 'num', text: fmtInt(tree.no_module_kernels) }), el('td', {})));
    }
    t.append(body);
    s.append(el('div', { class: 'scroll' }, t));
    s.append(el('h3', { text: 'Module paths as attributed (self time)' }));
    table(s, 'table-modules', groupColumns('module path', false), data.modules.slice());
  }
  groupSection('families', 'Time by kernel family', 'Kernel names with digits and template arguments stripped, so that one GEMM or one fused kernel shape is one row.',
    data.families, 'family', false);

  function roofline(canvas, title, rows, nameOf, c) {
    const tensor = [], fp32 = [];
    for (const r of rows) {
      if (isNum(r.tensor_gflops) && r.tensor_gflops > 0) tensor.push({ x: r.arithmetic_intensity, y: r.tensor_gflops, name: nameOf(r) });
      if (isNum(r.fp32_gflops) && r.fp32_gflops > 0) fp32.push({ x: r.arithmetic_intensity, y: r.fp32_gflops, name: nameOf(r) });
    }
    const xs = tensor.concat(fp32).map((p) => p.x);
    let xmin = Math.min(...xs) / 4, xmax = Math.max(...xs) * 4;
    const datasets = [
      { type: 'scatter', label: 'tensor cores', data: tensor, backgroundColor: palette[0], pointRadius: 5 },
      { type: 'scatter', label: 'FP32 CUDA cores', data: fp32, backgroundColor: palette[1], pointRadius: 5, pointStyle: 'triangle' },
    ];
    if (c) {
      const peaks = [['BF16/FP16 tensor', c.bf16_gflops, palette[0]], ['TF32 tensor', c.tf32_gflops, palette[4]], ['FP32', c.fp32_gflops, palette[1]]];
      for (const [, peak] of peaks) if (isNum(peak)) { xmin = Math.min(xmin, peak / c.dram_gbps / 8); xmax = Math.max(xmax, peak / c.dram_gbps * 8); }
      for (const [label, peak, color] of peaks) {
        if (!isNum(peak)) continue;
        const ridge = peak / c.dram_gbps;  // FLOP/byte where DRAM bandwidth stops being the limit
        datasets.push({ type: 'line', label: label + ' peak ' + (peak / 1e3).toFixed(0) + ' TFLOP/s', data: [{ x: xmin, y: xmin * c.dram_gbps }, { x: ridge, y: peak }, { x: xmax, y: peak }],
          borderColor: color, borderWidth: 1.5, borderDash: [6, 3], pointRadius: 0, fill: false });
      }
    }
    charts[canvas.id] = new Chart(canvas, {
      type: 'scatter',
      data: { datasets: datasets },
      options: {
        plugins: {
          title: { display: true, text: title + (c ? ' (DRAM ' + (c.dram_gbps / 1e3).toFixed(1) + ' TB/s)' : '') },
          tooltip: { callbacks: { label: (ctx) => (ctx.raw.name ? shorten(ctx.raw.name, 60) + ': ' : '') + ctx.raw.y.toFixed(1) + ' GFLOP/s at ' + ctx.raw.x.toFixed(2) + ' FLOP/byte' } },
        },
        scales: {
          x: { type: 'logarithmic', min: xmin, max: xmax, title: { display: true, text: 'arithmetic intensity (FLOP / DRAM byte)' } },
          y: { type: 'logarithmic', title: { display: true, text: 'achieved GFLOP/s' } },
        },
      },
    });
  }

  // Kernels by name.
  {
    const s = section('kernels', 'Kernels', 'One row per kernel name; the roofline figures sum the launches ncu replayed.');
    table(s, 'table-kernels', [
      { key: 'name', label: 'kernel', cls: 'name' },
      { key: 'kernels', label: 'launches', num: true, fmt: fmtInt },
      { key: 'time_ns', label: 'time', num: true, fmt: fmtTime },
      { key: 'time_share', label: '% time', num: true, fmt: fmtPct, value: (r) => share(r.time_ns) },
      { key: 'counted_kernels', label: 'with counters', num: true, fmt: fmtInt },
      { key: 'dram_bytes', label: 'DRAM bytes', num: true, fmt: fmtSi('B') },
      { key: 'tensor_gflops', label: 'tensor GFLOP/s', num: true, fmt: fmtFixed(1) },
      { key: 'fp32_gflops', label: 'FP32 GFLOP/s', num: true, fmt: fmtFixed(1) },
      { key: 'arithmetic_intensity', label: 'FLOP/byte', num: true, fmt: fmtFixed(2) },
    ], data.kernels.slice());
  }

  // What attribution could not explain, and what ran inside opaque backends.
  {
    const s = section('unattributed', 'Unattributed and opaque', 'Kernels no evidence tied to an operator, grouped by family and reason; and kernel time inside library backends that hide their structure.');
    s.append(el('h3', { text: 'Unattributed' }));
    if (data.unattributed.length) table(s, 'table-unattributed', [
      { key: 'family', label: 'family', cls: 'name' },
      { key: 'reason', label: 'reason' },
      { key: 'kernels', label: 'kernels', num: true, fmt: fmtInt },
      { key: 'time_ns', label: 'time', num: true, fmt: fmtTime },
      { key: 'share', label: '% time', num: true, fmt: fmtPct, value: (r) => share(r.time_ns) },
    ], data.unattributed.map((u) => Object.assign({ key: u.family + ' / ' + u.reason }, u)));
    else s.append(el('p', { class: 'note', id: 'unattributed-none', text: 'None: every kernel has an operator.' }));
    s.append(el('h3', { text: 'Opaque backends' }));
    if (data.opaque.length) table(s, 'table-opaque', [
      { key: 'backend', label: 'backend' },
      { key: 'time_ns', label: 'time', num: true, fmt: fmtTime },
      { key: 'share', label: '% time', num: true, fmt: fmtPct, value: (r) => share(r.time_ns) },
    ], data.opaque.map((o) => Object.assign({ key: o.backend }, o)));
    else s.append(el('p', { class: 'note', id: 'opaque-none', text: 'None.' }));
    if (data.anomalies.length) {
      s.append(el('h3', { text: 'Choices the engine made on its own' }));
      for (const a of data.anomalies) s.append(el('details', {}, el('summary', { text: a.kind + ' \u00d7 ' + a.count }), el('pre', { text: a.details.join('\n') })));
    }
    if (data.match_notes.length) s.append(el('details', {}, el('summary', { text: 'ncu match notes (' + data.match_notes.length + ')' }), el('pre', { text: data.match_notes.join('\n') })));
  }

  // The capture.
  {
    const s = section('capture', 'Capture', 'Where the profile comes from. The whole meta table is below.');
    table(s, 'table-capture', [{ key: 'label', label: 'fact' }, { key: 'value', label: 'value', cls: 'name' }],
      data.capture.map((f) => ({ key: f[0], label: f[0], value: f[1] })));
    const meta = Object.entries(data.metadata).map(([k, v]) => ({ key: k, value: v }));
    const d = el('details', {}, el('summary', { text: 'All metadata (' + meta.length + ' keys)' }));
    s.append(d);
    table(d, 'table-metadata', [{ key: 'key', label: 'key', cls: 'name' }, { key: 'value', label: 'value', cls: 'name' }], meta);
  }
  document.body.setAttribute('data-opprof-ready', '1');
})();
