// convstream console: reads the API with the operator's token (kept in sessionStorage, for
// this tab only) and shows what it returns through textContent and DOM calls only: names,
// inputs and masks are data, never markup.
'use strict';

(() => {
  const TOKEN_KEY = 'convstream.token';
  const STATUS_EVERY_MS = 2000;
  const PREVIEW_EVERY_MS = 1000;
  const HISTORY_EVERY_MS = 5000;
  const HISTORY_POINTS = 120; // the server keeps 10 minutes at one point per 5 s
  const MIN_SPARK_POINTS = 12; // a minute
  const PREVIEW_WIDTH = 480;
  const NUMBER_KEYS = ['size', 'width', 'height', 'sigma', 'amount', 'angle', 'neighbours'];
  const COMMON_KEYS = ['divisor', 'bias'];
  // A state's word with a mark of its own, so that it reads without colour.
  const STATE_MARKS = { starting: '◌', running: '●', stopping: '◍', finished: '✓', stopped: '■', failed: '✕' };

  const $ = (id) => document.getElementById(id);
  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  let selected = null;
  let presets = [];
  let choices = null; // borders, planes, plane keys and modes, from the first status
  const rows = new Map(); // name -> {row, cells}
  const latest = new Map(); // name -> the pipeline as the last status showed it
  const previewUrls = { input: null, output: null };
  let previewBusy = false;
  let maskPreviewAsked = 0;

  function notice(text, isError) {
    const el = $('notice');
    el.textContent = text;
    el.classList.toggle('error', Boolean(isError));
    el.setAttribute('role', isError ? 'alert' : 'status');
  }

  class RequestFailed extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function api(method, path, body) {
    const headers = {};
    if (token) headers.Authorization = 'Bearer ' + token;
    const options = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      options.body = JSON.stringify(body);
    }
    const response = await fetch(path, options);
    if (response.status === 401) {
      notice(token ? 'The token was refused: enter the API token again.' : 'This server needs an API token: enter it above.', true);
      throw new RequestFailed(401, 'unauthorized');
    }
    return response;
  }

  async function errorText(response) {
    try {
      const body = await response.json();
      return String(body.error || response.statusText);
    } catch (_) {
      return response.statusText || String(response.status);
    }
  }

  function pipelinePath(name, rest) {
    return '/pipelines/' + encodeURIComponent(name) + (rest || '');
  }

  // ---- the table ----

  function cell(row, className) {
    const td = document.createElement('td');
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  }

  function svgElement(kind, attributes) {
    const element = document.createElementNS('http://www.w3.org/2000/svg', kind);
    for (const [key, value] of Object.entries(attributes || {})) element.setAttribute(key, String(value));
    return element;
  }

  // The table's sparkline of the server's points (up to the last 10 minutes), at least a
  // minute wide and right-aligned, so that a young pipeline's line ends at "now".
  function sparkline(values) {
    const svg = svgElement('svg', { class: 'spark', viewBox: '0 0 100 20', preserveAspectRatio: 'none', 'aria-hidden': 'true' });
    // Headroom above the highest rate, so a steady one is a line below the top.
    const most = Math.max(1, ...values) * 1.25;
    const step = 100 / (Math.min(HISTORY_POINTS, Math.max(MIN_SPARK_POINTS, values.length)) - 1);
    const start = 100 - step * (values.length - 1);
    const points = values.map((v, i) => (start + i * step).toFixed(1) + ',' + (19 - (v / most) * 18).toFixed(1));
    svg.appendChild(svgElement('polyline', { points: points.join(' ') }));
    return svg;
  }

  // Text with a break allowed after each separator of a mask or a path (`,` `:` `=` `/`
  // `]`...), so a long one wraps between its parts, never inside a word.
  function breakable(text) {
    const parts = String(text).split(/(?<=[,:=;/\]|])/);
    const out = [];
    parts.forEach((part, i) => {
      out.push(document.createTextNode(part));
      if (i < parts.length - 1) out.push(document.createElement('wbr'));
    });
    return out;
  }

  // Each cell says what it holds (`data-label`), which the phone layout shows beside it.
  function labelled(td, label) {
    td.dataset.label = label;
    return td;
  }

  function makeRow(name) {
    const row = document.createElement('tr');
    row.dataset.name = name;
    const nameCell = document.createElement('th');
    nameCell.scope = 'row';
    const select = document.createElement('button');
    select.type = 'button';
    select.className = 'link';
    select.textContent = name;
    select.setAttribute('aria-label', 'Show pipeline ' + name);
    select.addEventListener('click', () => selectPipeline(name));
    nameCell.appendChild(select);
    row.appendChild(nameCell);
    const cells = {
      select,
      state: labelled(cell(row, 'state'), 'State'),
      source: labelled(cell(row, 'text'), 'Input'),
      mask: labelled(cell(row, 'text mask-text'), 'Mask'),
      device: labelled(cell(row, 'device'), 'Device'),
      fps: labelled(cell(row), 'fps'),
      dropped: labelled(cell(row), 'Dropped'),
      p99: labelled(cell(row), 'p99'),
    };
    const actions = labelled(cell(row, 'actions'), 'Actions');
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.className = 'danger';
    remove.textContent = 'Delete';
    remove.setAttribute('aria-label', 'Delete pipeline ' + name);
    remove.addEventListener('click', () => deletePipeline(name, remove));
    // Stop keeps the pipeline listed (state stopped); Start runs it again. Each is enabled
    // only in the states the API accepts it in (showPipelines sets that).
    const stop = document.createElement('button');
    stop.type = 'button';
    stop.textContent = 'Stop';
    stop.setAttribute('aria-label', 'Stop pipeline ' + name);
    stop.addEventListener('click', () => stopOrStart(name, 'stop'));
    const start = document.createElement('button');
    start.type = 'button';
    start.textContent = 'Start';
    start.setAttribute('aria-label', 'Start pipeline ' + name);
    start.addEventListener('click', () => stopOrStart(name, 'start'));
    actions.append(stop, start, remove);
    cells.stop = stop;
    cells.start = start;
    $('pipeline-rows').appendChild(row);
    return { row, cells };
  }

  function setText(element, text) {
    if (element.dataset.text !== text) {
      element.dataset.text = text;
      element.replaceChildren(...breakable(text));
    }
  }

  function showPipelines(pipelines) {
    const seen = new Set();
    let replaced = false;
    for (const p of pipelines) {
      const name = String(p.name);
      seen.add(name);
      // Another pipeline under the selected name (deleted and added again): its picker,
      // previews and plots are opened anew, never left on the old one's.
      const before = latest.get(name);
      if (name === selected && before && before.id !== p.id) replaced = true;
      latest.set(name, p);
      const entry = rows.get(name) || makeRow(name);
      rows.set(name, entry);
      const c = entry.cells;
      const state = String(p.state);
      c.state.replaceChildren(stateWord(state, p.reconnecting ? ' (reconnecting)' : ''));
      c.state.className = 'state state-' + state.replace(/[^a-z]/g, '');
      // A failed pipeline says why, as text: the error may quote an input's name.
      const reason = state === 'failed' && p.last_error != null ? String(p.last_error) : '';
      if (reason) {
        const why = document.createElement('span');
        why.className = 'reason';
        why.append(...breakable(reason));
        c.state.append(document.createElement('br'), why);
      }
      c.state.title = reason;
      const ended = ['finished', 'stopped', 'failed'].includes(state);
      c.stop.disabled = !['starting', 'running'].includes(state);
      c.start.disabled = !ended;
      setText(c.source, String(p.source));
      setText(c.mask, maskSummary(p));
      c.device.textContent = p.device ? String(p.device) : String(p.device_requested);
      const history = Array.isArray(p.fps_history) ? p.fps_history.map((v) => Number(v) || 0) : [];
      const fps = (Number(p.fps) || 0).toFixed(1);
      c.fps.replaceChildren(sparkline(history), document.createTextNode(' ' + fps));
      c.fps.setAttribute('aria-label', fps + ' frames per second now');
      c.dropped.textContent = String(p.counters ? p.counters.frames_dropped : 0);
      c.p99.textContent = p.latency_p99_ms == null ? '–' : Number(p.latency_p99_ms).toFixed(1) + ' ms';
      entry.row.classList.toggle('selected', name === selected);
      c.select.setAttribute('aria-pressed', name === selected ? 'true' : 'false');
      if (name === selected) showSelectedState(p);
    }
    for (const [name, entry] of rows) {
      if (!seen.has(name)) {
        entry.row.remove();
        rows.delete(name);
        latest.delete(name);
        if (name === selected) selectPipeline(null);
      }
    }
    if (replaced) selectPipeline(selected);
    $('empty').hidden = rows.size > 0;
  }

  // A state's word after its mark (drawn by the style from `data-mark`), so that states
  // differ in shape as well as colour.
  function stateWord(state, extra) {
    const word = document.createElement('span');
    word.className = 'state-word';
    word.dataset.mark = STATE_MARKS[state] || '?';
    word.textContent = state + extra;
    return word;
  }

  // The mask as the table shows it: the mask, then each plane's own.
  function maskSummary(p) {
    const planeMasks = p.plane_masks && typeof p.plane_masks === 'object' ? Object.entries(p.plane_masks) : [];
    let text = String(p.mask);
    for (const [plane, mask] of planeMasks) text += '; ' + plane + '=' + String(mask);
    if (p.planes && String(p.planes) !== 'all') text += '; planes=' + String(p.planes);
    if (p.border && String(p.border) !== 'reflect') text += '; border=' + String(p.border);
    return text;
  }

  // The selected pipeline's state, its reason and its last log lines, as text.
  function showSelectedState(p) {
    const state = String(p.state);
    const line = $('detail-state');
    line.className = 'detail-state state state-' + state.replace(/[^a-z]/g, '');
    line.replaceChildren(stateWord(state, ''));
    if (p.last_error != null && state === 'failed') {
      line.append(document.createTextNode(': '), ...breakable(String(p.last_error)));
    }
    setText($('current-mask'), maskSummary(p));
    const log = Array.isArray(p.log) ? p.log : [];
    $('log-block').hidden = log.length === 0;
    const items = log.slice(-10).map((entry) => {
      const li = document.createElement('li');
      li.className = 'log-' + String(entry.level).toLowerCase().replace(/[^a-z]/g, '');
      const at = new Date(Number(entry.at) * 1000);
      const time = document.createElement('time');
      time.textContent = at.toLocaleTimeString();
      const level = document.createElement('strong');
      level.textContent = ' ' + String(entry.level) + ' ';
      li.append(time, level, ...breakable(String(entry.text)));
      return li;
    });
    $('log-lines').replaceChildren(...items);
  }

  async function refresh() {
    try {
      const response = await api('GET', '/console/status');
      if (!response.ok) {
        notice('The server answered ' + response.status + ': ' + (await errorText(response)), true);
        return;
      }
      const body = await response.json();
      if (presets.length === 0 && Array.isArray(body.presets)) showPresets(body.presets);
      if (choices === null) showChoices(body);
      showPipelines(Array.isArray(body.pipelines) ? body.pipelines : []);
      if ($('notice').classList.contains('error')) notice('Connected.', false);
    } catch (e) {
      if (!(e instanceof RequestFailed)) notice('The server cannot be reached: ' + e.message, true);
    }
  }

  // ---- the selected pipeline ----

  function selectPipeline(name) {
    selected = name;
    $('detail').hidden = name === null;
    $('detail-name').textContent = name || '';
    $('switch-result').textContent = '';
    $('switch-warnings').replaceChildren();
    for (const [n, entry] of rows) {
      entry.row.classList.toggle('selected', n === name);
      entry.cells.select.setAttribute('aria-pressed', n === name ? 'true' : 'false');
    }
    for (const stage of ['input', 'output']) {
      $('preview-' + stage).removeAttribute('src');
      $(stage + '-frame').textContent = '';
      if (previewUrls[stage]) URL.revokeObjectURL(previewUrls[stage]);
      previewUrls[stage] = null;
    }
    for (const plot of ['fps', 'dropped', 'p99']) $('plot-' + plot).replaceChildren();
    if (name !== null) {
      // The picker opens on what this pipeline runs, never on another's or an earlier choice.
      const p = latest.get(name);
      if (p) {
        showSelectedState(p);
        fillPicker(p.filter);
      }
      refresh();
      refreshPreviews();
      refreshHistory();
    }
  }

  async function preview(stage) {
    const name = selected;
    const response = await api('GET', pipelinePath(name, '/snapshot?stage=' + stage + '&width=' + PREVIEW_WIDTH));
    if (!response.ok || name !== selected) return;
    const blob = await response.blob();
    const url = URL.createObjectURL(blob);
    const img = $('preview-' + stage);
    img.src = url;
    if (previewUrls[stage]) URL.revokeObjectURL(previewUrls[stage]);
    previewUrls[stage] = url;
    const frame = response.headers.get('X-Frame-Index');
    img.dataset.frame = frame || '';
    $(stage + '-frame').textContent = frame ? 'frame ' + frame : '';
  }

  async function refreshPreviews() {
    if (selected === null || previewBusy || document.hidden) return;
    previewBusy = true;
    try {
      await Promise.all([preview('input'), preview('output')]);
    } catch (_) {
      // A missed preview shows the last one; the next tick tries again.
    } finally {
      previewBusy = false;
    }
  }

  // ---- history plots ----

  // A plot of `values` (null: no value) with its axes: time before now across, over the
  // span the points cover (a minute at least, 10 at most), and `unit` up from 0 to a round
  // maximum.
  function plot(values, times, now, unit) {
    const width = 320, height = 124, left = 44, right = 10, top = 18, bottom = 24;
    const svg = svgElement('svg', { class: 'plot-svg', viewBox: '0 0 ' + width + ' ' + height, role: 'img' });
    const known = values.filter((v) => v != null);
    // Counts of frames step by whole frames: the axis goes to 2 at least.
    const most = niceCeiling(Math.max(unit === 'frames' ? 2 : 0, ...known));
    const covered = times.length ? now - times[0] : 0;
    const span = Math.min(600, Math.max(60, Math.ceil(covered / 60) * 60));
    const x = (t) => left + (width - left - right) * (1 - Math.min(span, Math.max(0, now - t)) / span);
    const y = (v) => top + (height - top - bottom) * (1 - v / most);
    svg.appendChild(svgElement('line', { class: 'axis', x1: left, y1: top, x2: left, y2: height - bottom }));
    svg.appendChild(svgElement('line', { class: 'axis', x1: left, y1: height - bottom, x2: width - right, y2: height - bottom }));
    for (const v of [0, most / 2, most]) {
      svg.appendChild(svgElement('line', { class: 'grid', x1: left, y1: y(v), x2: width - right, y2: y(v) }));
      const label = svgElement('text', { x: left - 4, y: y(v) + 4, 'text-anchor': 'end' });
      label.textContent = formatTick(v);
      svg.appendChild(label);
    }
    for (const before of [span, span / 2, 0]) {
      const anchor = before === span ? 'start' : before === 0 ? 'end' : 'middle';
      const label = svgElement('text', { x: x(now - before), y: height - 8, 'text-anchor': anchor });
      label.textContent = before === 0 ? 'now' : '−' + (before % 60 === 0 ? before / 60 + ' min' : before + ' s');
      svg.appendChild(label);
    }
    const unitLabel = svgElement('text', { x: 2, y: 11, class: 'unit' });
    unitLabel.textContent = unit;
    svg.appendChild(unitLabel);
    // Runs of known values as lines; a lone point as a dot.
    let run = [];
    const flush = () => {
      if (run.length === 1) svg.appendChild(svgElement('circle', { class: 'dot', cx: run[0][0], cy: run[0][1], r: 2 }));
      if (run.length > 1) svg.appendChild(svgElement('polyline', { class: 'series', points: run.map((p) => p.join(',')).join(' ') }));
      run = [];
    };
    values.forEach((v, i) => {
      if (v == null) flush();
      else run.push([x(times[i]).toFixed(1), y(v).toFixed(1)]);
    });
    flush();
    const title = svgElement('title');
    title.textContent = known.length + ' points, the last ' + (known.length ? formatTick(known[known.length - 1]) : 'none') + ' ' + unit;
    svg.prepend(title);
    return svg;
  }

  function niceCeiling(value) {
    if (!(value > 0)) return 1;
    const power = Math.pow(10, Math.floor(Math.log10(value)));
    for (const step of [1, 2, 2.5, 5, 10]) if (value <= step * power) return step * power;
    return 10 * power;
  }

  function formatTick(v) {
    return Number.isInteger(v) ? String(v) : String(Number(v.toFixed(v < 10 ? 2 : 1)));
  }

  async function refreshHistory() {
    const name = selected;
    if (name === null || document.hidden) return;
    try {
      const response = await api('GET', pipelinePath(name, '/history'));
      if (!response.ok || name !== selected) return;
      const body = await response.json();
      const points = Array.isArray(body.points) ? body.points : [];
      $('history-interval').textContent = String(Number(body.interval_seconds) || 5);
      const times = points.map((p) => Number(p.at));
      const now = times.length ? Math.max(Date.now() / 1000, times[times.length - 1]) : Date.now() / 1000;
      const series = {
        fps: [points.map((p) => Number(p.fps)), 'frames/s'],
        dropped: [points.map((p) => Number(p.frames_dropped)), 'frames'],
        p99: [points.map((p) => (p.latency_p99_ms == null ? null : Number(p.latency_p99_ms))), 'ms'],
      };
      for (const [key, [values, unit]] of Object.entries(series)) {
        const area = $('plot-' + key);
        area.dataset.points = String(values.filter((v) => v != null).length);
        area.replaceChildren(plot(values, times, now, unit));
      }
    } catch (_) {
      // The next tick tries again.
    }
  }

  // ---- the filter picker ----

  function option(value, text) {
    const o = document.createElement('option');
    o.value = value;
    o.textContent = text;
    return o;
  }

  function showPresets(list) {
    presets = list;
    const select = $('preset');
    select.replaceChildren(...list.map((p) => option(String(p.name), String(p.name))));
    showParams();
  }

  // Border, planes, plane-mask keys and modes, as the server names them.
  function showChoices(body) {
    choices = {
      borders: Array.isArray(body.borders) ? body.borders : [],
      planes: Array.isArray(body.planes) ? body.planes.map(String) : [],
      planeKeys: Array.isArray(body.plane_keys) ? body.plane_keys.map(String) : [],
      modes: Array.isArray(body.modes) ? body.modes.map(String) : [],
    };
    $('border').replaceChildren(...choices.borders.map((b) => option(String(b.name), String(b.name))));
    $('planes').replaceChildren(...choices.planes.map((p) => option(p, p)));
    showBorderMeaning();
  }

  function showBorderMeaning() {
    const border = choices && choices.borders.find((b) => String(b.name) === $('border').value);
    $('border-meaning').textContent = border ? 'Border ' + String(border.name) + ': ' + String(border.meaning) : '';
  }

  function field(key, control, text) {
    const wrap = document.createElement('div');
    const label = document.createElement('label');
    control.id = 'param-' + key;
    control.name = key;
    label.htmlFor = control.id;
    label.textContent = text || key;
    wrap.append(label, control);
    return wrap;
  }

  function selectOf(pairs) {
    const select = document.createElement('select');
    select.append(...pairs.map(([value, text]) => option(value, text)));
    return select;
  }

  function showParams() {
    const preset = presets.find((p) => p.name === $('preset').value);
    const params = $('params');
    params.replaceChildren();
    if (!preset) return;
    $('preset-summary').textContent = String(preset.summary);
    for (const key of [...preset.keys.filter((k) => NUMBER_KEYS.includes(k)), ...COMMON_KEYS]) {
      const input = document.createElement('input');
      input.type = 'number';
      input.step = 'any';
      input.placeholder = 'default';
      params.appendChild(field(key, input));
    }
    params.appendChild(field('normalize', selectOf([['', 'default'], ['true', 'yes'], ['false', 'no']])));
    const modes = choices ? choices.modes : ['convolve', 'correlate'];
    params.appendChild(field('mode', selectOf([['', 'default'], ...modes.map((m) => [m, m])])));
    if (preset.name === 'custom') {
      const file = document.createElement('input');
      file.type = 'text';
      file.placeholder = 'none (the matrix below)';
      file.spellcheck = false;
      params.appendChild(field('file', file, 'file (in mask_dir)'));
    }
    $('matrix-field').hidden = preset.name !== 'custom';
  }

  // Opens the picker on `filter` (the status's `filter`: each mask's keys, border, planes).
  function fillPicker(filter) {
    if (!filter || typeof filter !== 'object') return;
    const mask = filter.mask || {};
    const presetName = mask.preset == null ? 'custom' : String(mask.preset);
    if (presets.some((p) => p.name === presetName)) $('preset').value = presetName;
    showParams();
    for (const control of $('params').querySelectorAll('input, select')) {
      const value = mask[control.name];
      control.value = value == null ? '' : String(value);
    }
    if (Array.isArray(mask.matrix)) $('matrix').value = mask.matrix.map((row) => row.join(' ')).join('\n');
    if (filter.border != null) $('border').value = String(filter.border);
    if (filter.planes != null) $('planes').value = String(filter.planes);
    showBorderMeaning();
    const planeMasks = filter.plane_masks && typeof filter.plane_masks === 'object' ? Object.entries(filter.plane_masks) : [];
    $('plane-mask-rows').replaceChildren(...planeMasks.map(([plane, params]) => planeMaskRow(plane, specOf(params))));
    $('current-mask').dataset.named = filter.mask_name == null ? '' : String(filter.mask_name);
    previewMask();
  }

  // A mask's keys as a SPEC (`gaussian:size=5,sigma=1.5`; a matrix as `[[..],[..]]`).
  function specOf(params) {
    if (!params || typeof params !== 'object') return '';
    const parts = [];
    for (const [key, value] of Object.entries(params)) {
      if (key === 'preset' || value == null) continue;
      if (key === 'matrix' && Array.isArray(value)) parts.push('matrix=[' + value.map((r) => '[' + r.join(',') + ']').join(',') + ']');
      else parts.push(key + '=' + String(value));
    }
    const name = params.preset == null ? 'custom' : String(params.preset);
    return parts.length ? name + ':' + parts.join(',') : name;
  }

  let planeMaskCount = 0;

  function planeMaskRow(plane, spec) {
    const li = document.createElement('li');
    planeMaskCount += 1;
    const keys = choices ? choices.planeKeys : ['y', 'u', 'v', 'uv', 'r', 'g', 'b'];
    const which = selectOf(keys.map((k) => [k, k]));
    which.value = plane;
    which.className = 'plane-key';
    which.id = 'plane-key-' + planeMaskCount;
    const whichLabel = document.createElement('label');
    whichLabel.htmlFor = which.id;
    whichLabel.textContent = 'Plane';
    const text = document.createElement('input');
    text.type = 'text';
    text.className = 'plane-spec';
    text.spellcheck = false;
    text.value = spec;
    text.id = 'plane-spec-' + planeMaskCount;
    const textLabel = document.createElement('label');
    textLabel.htmlFor = text.id;
    textLabel.textContent = 'Mask (SPEC)';
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.textContent = 'Remove';
    remove.setAttribute('aria-label', 'Remove the mask of plane ' + plane);
    remove.addEventListener('click', () => li.remove());
    li.append(whichLabel, which, textLabel, text, remove);
    return li;
  }

  function parseMatrix(text) {
    const rowsOfNumbers = text
      .split('\n')
      .map((line) => line.replace(/#.*/, '').trim())
      .filter((line) => line.length > 0)
      .map((line) => line.split(/[\s,]+/).filter((s) => s.length > 0).map(Number));
    if (rowsOfNumbers.length === 0 || rowsOfNumbers.some((r) => r.some((v) => !Number.isFinite(v)))) {
      throw new Error('the matrix must be rows of numbers');
    }
    return rowsOfNumbers;
  }

  function maskFromForm() {
    const mask = { preset: $('preset').value };
    for (const input of $('params').querySelectorAll('input, select')) {
      if (input.value === '') continue;
      if (input.name === 'normalize') mask.normalize = input.value === 'true';
      else if (input.name === 'mode' || input.name === 'file') mask[input.name] = input.value;
      else mask[input.name] = Number(input.value);
    }
    if (mask.preset === 'custom' && mask.file === undefined) mask.matrix = parseMatrix($('matrix').value);
    return mask;
  }

  // The whole filter the form shows: the mask, border, planes and every plane mask (none
  // listed clears them), so that Apply sets exactly what is on the page.
  function filterFromForm() {
    const planeMasks = {};
    for (const li of $('plane-mask-rows').children) {
      const key = li.querySelector('.plane-key').value;
      const spec = li.querySelector('.plane-spec').value.trim();
      if (spec === '') throw new Error('plane ' + key + ' has no mask: write one or remove it');
      if (key in planeMasks) throw new Error('plane ' + key + ' is listed twice');
      planeMasks[key] = spec;
    }
    return { mask: maskFromForm(), border: $('border').value, planes: $('planes').value, plane_masks: planeMasks };
  }

  // The matrix of the mask on the form, as `masks show` prints it (latest answer wins).
  async function previewMask() {
    const asked = ++maskPreviewAsked;
    const out = $('mask-preview');
    let mask;
    try {
      mask = maskFromForm();
    } catch (e) {
      out.textContent = e.message;
      return;
    }
    try {
      const response = await api('POST', '/console/mask-preview', { mask });
      if (asked !== maskPreviewAsked) return;
      if (!response.ok) {
        out.textContent = 'Not a mask: ' + (await errorText(response));
        return;
      }
      const body = await response.json();
      out.textContent = String(body.text);
      out.dataset.width = String(body.width);
      out.dataset.height = String(body.height);
    } catch (e) {
      if (!(e instanceof RequestFailed) && asked === maskPreviewAsked) out.textContent = e.message;
    }
  }

  let previewTimer = null;
  function previewSoon() {
    clearTimeout(previewTimer);
    previewTimer = setTimeout(previewMask, 250);
  }

  async function applyMask(event) {
    event.preventDefault();
    const name = selected;
    const result = $('switch-result');
    const warnings = $('switch-warnings');
    if (name === null) return;
    warnings.replaceChildren();
    let filter;
    try {
      filter = filterFromForm();
    } catch (e) {
      result.textContent = 'Not applied: ' + e.message;
      return;
    }
    result.textContent = 'Applying…';
    try {
      const response = await api('PUT', pipelinePath(name, '/filter'), filter);
      if (!response.ok) {
        result.textContent = 'Not applied: ' + (await errorText(response));
        return;
      }
      const body = await response.json();
      result.dataset.frame = String(body.applies_from_frame);
      result.textContent = 'Mask ' + String(body.mask) + ' applies from frame ' + String(body.applies_from_frame) +
        ' (border ' + String(body.border) + ', planes ' + String(body.planes) + ').';
      const said = Array.isArray(body.warnings) ? body.warnings : [];
      warnings.replaceChildren(...said.map((w) => {
        const li = document.createElement('li');
        li.append(document.createTextNode('Warning: '), ...breakable(String(w)));
        return li;
      }));
      // The answer stays in sight, below the button that asked for it.
      warnings.scrollIntoView({ block: 'nearest' });
      await refresh();
      if (name === selected && latest.get(name)) fillPicker(latest.get(name).filter);
    } catch (e) {
      if (!(e instanceof RequestFailed)) result.textContent = 'Not applied: ' + e.message;
    }
  }

  // ---- confirmation and delete ----

  function confirmAction(text) {
    return new Promise((resolve) => {
      const box = $('confirm');
      const ok = $('confirm-ok');
      const cancel = $('confirm-cancel');
      const opener = document.activeElement;
      $('confirm-text').textContent = text;
      box.hidden = false;
      cancel.focus();
      const close = (answer) => {
        box.hidden = true;
        ok.removeEventListener('click', yes);
        cancel.removeEventListener('click', no);
        box.removeEventListener('keydown', key);
        if (opener && opener.isConnected) opener.focus();
        resolve(answer);
      };
      const yes = () => close(true);
      const no = () => close(false);
      const key = (e) => {
        if (e.key === 'Escape') no();
        if (e.key === 'Tab') {
          // Focus stays in the dialog.
          e.preventDefault();
          (document.activeElement === ok ? cancel : ok).focus();
        }
      };
      ok.addEventListener('click', yes);
      cancel.addEventListener('click', no);
      box.addEventListener('keydown', key);
    });
  }

  async function deletePipeline(name) {
    if (!(await confirmAction('Delete pipeline ' + name + '? It stops, its output is finalised and it leaves the list.'))) return;
    notice('Deleting ' + name + '…', false);
    try {
      const response = await api('DELETE', pipelinePath(name));
      notice(response.ok ? 'Deleted ' + name + '.' : 'Not deleted: ' + (await errorText(response)), !response.ok);
      refresh();
    } catch (e) {
      if (!(e instanceof RequestFailed)) notice('Not deleted: ' + e.message, true);
    }
  }

  async function stopOrStart(name, action) {
    const question = action === 'stop'
      ? 'Stop pipeline ' + name + '? Its output is finalised; it stays listed as stopped and can be started again.'
      : 'Start pipeline ' + name + ' again with its settings? Its output is written beside what it wrote.';
    if (!(await confirmAction(question))) return;
    const done = action === 'stop' ? 'Stopped ' : 'Started ';
    const failed = action === 'stop' ? 'Not stopped: ' : 'Not started: ';
    try {
      const response = await api('POST', pipelinePath(name) + '/' + action, {});
      notice(response.ok ? done + name + '.' : failed + (await errorText(response)), !response.ok);
      refresh();
    } catch (e) {
      if (!(e instanceof RequestFailed)) notice(failed + e.message, true);
    }
  }

  async function reloadConfig() {
    if (!(await confirmAction('Reload the config file? Changed pipelines restart or switch, removed ones stop, new ones start.'))) return;
    try {
      const response = await api('POST', '/console/reload', {});
      notice(response.ok ? 'Reload requested: the server log says what changed.' : 'Not reloaded: ' + (await errorText(response)), !response.ok);
      setTimeout(refresh, 1500);
    } catch (e) {
      if (!(e instanceof RequestFailed)) notice('Not reloaded: ' + e.message, true);
    }
  }

  // ---- the token ----

  function useToken(event) {
    event.preventDefault();
    token = $('token').value.trim();
    $('token').value = '';
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
    notice(token ? 'Token set for this tab.' : 'No token.', false);
    refresh();
  }

  function forgetToken() {
    token = '';
    sessionStorage.removeItem(TOKEN_KEY);
    notice('Token forgotten.', false);
  }

  document.addEventListener('DOMContentLoaded', () => {
    $('token-form').addEventListener('submit', useToken);
    $('forget-token').addEventListener('click', forgetToken);
    $('reload-config').addEventListener('click', reloadConfig);
    $('preset').addEventListener('change', () => {
      showParams();
      previewSoon();
    });
    $('border').addEventListener('change', showBorderMeaning);
    $('params').addEventListener('input', previewSoon);
    $('params').addEventListener('change', previewSoon);
    $('matrix').addEventListener('input', previewSoon);
    $('add-plane-mask').addEventListener('click', () => {
      const row = planeMaskRow(choices && choices.planeKeys.includes('uv') ? 'uv' : 'y', 'neutral');
      $('plane-mask-rows').appendChild(row);
      row.querySelector('input').focus();
    });
    $('mask-form').addEventListener('submit', applyMask);
    refresh();
    setInterval(refresh, STATUS_EVERY_MS);
    setInterval(refreshPreviews, PREVIEW_EVERY_MS);
    setInterval(refreshHistory, HISTORY_EVERY_MS);
  });
})();
