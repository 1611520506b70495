// convstream console: reads the API with the operator's token (kept in sessionStorage, for
// this tab only) and shows what it returns through textContent and DOM calls only: names,
// inputs and masks are data, never markup.
'use strict';

(() => {
  const TOKEN_KEY = 'convstream.token';
  const STATUS_EVERY_MS = 2000;
  const PREVIEW_EVERY_MS = 1000;
  const HISTORY_POINTS = 30; // a minute at one point per two seconds
  const PREVIEW_WIDTH = 480;
  const NUMBER_KEYS = ['size', 'width', 'height', 'sigma', 'amount', 'angle', 'neighbours'];
  const COMMON_KEYS = ['divisor', 'bias'];

  const $ = (id) => document.getElementById(id);
  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  let selected = null;
  let presets = [];
  const rows = new Map(); // name -> {row, cells}
  const fpsHistory = new Map(); // name -> [fps]
  const previewUrls = { input: null, output: null };
  let previewBusy = false;

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

  function sparkline(values) {
    const ns = 'http://www.w3.org/2000/svg';
    const svg = document.createElementNS(ns, 'svg');
    svg.setAttribute('class', 'spark');
    svg.setAttribute('viewBox', '0 0 100 20');
    svg.setAttribute('preserveAspectRatio', 'none');
    svg.setAttribute('aria-hidden', 'true');
    const line = document.createElementNS(ns, 'polyline');
    // Headroom above the highest rate, so a steady one is a line below the top.
    const most = Math.max(1, ...values) * 1.25;
    const step = values.length > 1 ? 100 / (HISTORY_POINTS - 1) : 0;
    const start = 100 - step * (values.length - 1);
    line.setAttribute('points', values.map((v, i) => (start + i * step).toFixed(1) + ',' + (19 - (v / most) * 18).toFixed(1)).join(' '));
    svg.appendChild(line);
    return svg;
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
      state: cell(row),
      source: cell(row, 'text'),
      mask: cell(row, 'text'),
      device: cell(row),
      fps: cell(row),
      dropped: cell(row),
      p99: cell(row),
    };
    const actions = cell(row);
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

  function showPipelines(pipelines) {
    const seen = new Set();
    for (const p of pipelines) {
      const name = String(p.name);
      seen.add(name);
      const entry = rows.get(name) || makeRow(name);
      rows.set(name, entry);
      const c = entry.cells;
      c.state.textContent = String(p.state) + (p.reconnecting ? ' (reconnecting)' : '');
      c.state.className = 'state-' + String(p.state).replace(/[^a-z]/g, '');
      // A failed pipeline says why, as text: the error may quote an input's name.
      const reason = String(p.state) === 'failed' && p.last_error != null ? String(p.last_error) : '';
      if (reason) {
        const why = document.createElement('span');
        why.className = 'reason';
        why.textContent = reason;
        c.state.append(document.createElement('br'), why);
      }
      c.state.title = reason;
      const ended = ['finished', 'stopped', 'failed'].includes(String(p.state));
      c.stop.disabled = !['starting', 'running'].includes(String(p.state));
      c.start.disabled = !ended;
      c.source.textContent = String(p.source);
      c.mask.textContent = String(p.mask);
      c.device.textContent = p.device ? String(p.device) : String(p.device_requested);
      const history = fpsHistory.get(name) || [];
      history.push(Number(p.fps) || 0);
      while (history.length > HISTORY_POINTS) history.shift();
      fpsHistory.set(name, history);
      c.fps.replaceChildren(sparkline(history), document.createTextNode(' ' + (Number(p.fps) || 0).toFixed(1)));
      c.fps.setAttribute('aria-label', (Number(p.fps) || 0).toFixed(1) + ' frames per second now');
      c.dropped.textContent = String(p.counters ? p.counters.frames_dropped : 0);
      c.p99.textContent = p.latency_p99_ms == null ? '–' : Number(p.latency_p99_ms).toFixed(1) + ' ms';
      entry.row.classList.toggle('selected', name === selected);
      c.select.setAttribute('aria-pressed', name === selected ? 'true' : 'false');
      if (name === selected) $('current-mask').textContent = String(p.mask);
    }
    for (const [name, entry] of rows) {
      if (!seen.has(name)) {
        entry.row.remove();
        rows.delete(name);
        fpsHistory.delete(name);
        if (name === selected) selectPipeline(null);
      }
    }
    $('empty').hidden = rows.size > 0;
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
    if (name !== null) {
      refresh();
      refreshPreviews();
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

  // ---- the mask picker ----

  function showPresets(list) {
    presets = list;
    const select = $('preset');
    select.replaceChildren();
    for (const p of list) {
      const option = document.createElement('option');
      option.value = String(p.name);
      option.textContent = String(p.name);
      select.appendChild(option);
    }
    showParams();
  }

  function field(key, control) {
    const wrap = document.createElement('div');
    const label = document.createElement('label');
    control.id = 'param-' + key;
    control.name = key;
    label.htmlFor = control.id;
    label.textContent = key;
    wrap.append(label, control);
    return wrap;
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
    const normalize = document.createElement('select');
    for (const [value, text] of [['', 'default'], ['true', 'yes'], ['false', 'no']]) {
      const option = document.createElement('option');
      option.value = value;
      option.textContent = text;
      normalize.appendChild(option);
    }
    params.appendChild(field('normalize', normalize));
    $('matrix-field').hidden = preset.name !== 'custom';
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
      else mask[input.name] = Number(input.value);
    }
    if (mask.preset === 'custom') mask.matrix = parseMatrix($('matrix').value);
    return mask;
  }

  async function applyMask(event) {
    event.preventDefault();
    const name = selected;
    const result = $('switch-result');
    if (name === null) return;
    let mask;
    try {
      mask = maskFromForm();
    } catch (e) {
      result.textContent = 'Not applied: ' + e.message;
      return;
    }
    result.textContent = 'Applying…';
    try {
      const response = await api('PUT', pipelinePath(name, '/filter'), { mask });
      if (!response.ok) {
        result.textContent = 'Not applied: ' + (await errorText(response));
        return;
      }
      const body = await response.json();
      result.dataset.frame = String(body.applies_from_frame);
      result.textContent = 'Mask ' + String(body.mask) + ' applies from frame ' + String(body.applies_from_frame) +
        (body.warning ? ' (' + String(body.warning) + ')' : '');
      refresh();
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
    $('preset').addEventListener('change', showParams);
    $('mask-form').addEventListener('submit', applyMask);
    refresh();
    setInterval(refresh, STATUS_EVERY_MS);
    setInterval(refreshPreviews, PREVIEW_EVERY_MS);
  });
})();
