// The daemon's HTTP API and its event stream, as the page uses them. Every request carries the
// bearer token the user entered (kept in this browser's localStorage) when there is one, so the
// page works against a daemon started with --token-file and --auth-reads.

const TOKEN_KEY = 'kernelscan.token';

export class ApiError extends Error {
  constructor(status, type, message, details) {
    super(message);
    this.status = status;  // 0: the daemon could not be reached
    this.type = type;
    this.details = details;
  }
}

export function token() { return localStorage.getItem(TOKEN_KEY) || ''; }
export function setToken(t) {
  if (t) localStorage.setItem(TOKEN_KEY, t); else localStorage.removeItem(TOKEN_KEY);
}

// Listeners told of every 401, so the page can ask for a token.
const unauthorizedListeners = new Set();
export function onUnauthorized(fn) { unauthorizedListeners.add(fn); }

// A header value fetch() refuses (a character beyond U+00FF) would read as a daemon that cannot
// be reached: it is refused here, naming the header (type invalid_header, its details' field the
// header); request() opens the token panel for a token so refused, as for a 401.
function headers(extra = {}) {
  const h = {Accept: 'application/json', ...extra};
  const t = token();
  if (t) h.Authorization = `Bearer ${t}`;
  for (const [name, value] of Object.entries(h)) {
    const isToken = name === 'Authorization';
    const text = isToken ? t : String(value);
    const at = [...text].findIndex((c) => c.codePointAt(0) > 0xff);
    if (at < 0) continue;
    throw new ApiError(0, 'invalid_header',
                       `${isToken ? 'the token' : name} holds a character an HTTP header cannot ` +
                           `carry (character ${at + 1}); use letters, digits and punctuation`,
                       [{field: name, message: `character ${at + 1} is beyond U+00FF`}]);
  }
  return h;
}

// The response to a request, whatever its status; ApiError 0 where the daemon cannot be reached.
async function send(method, path, body, extraHeaders) {
  let init;
  try {
    init = {method, headers: headers(extraHeaders)};
  } catch (e) {
    if (e.details && e.details[0].field === 'Authorization') unauthorizedListeners.forEach((fn) => fn());
    throw e;
  }
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
  }
  try {
    return await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, 'unreachable', `cannot reach the daemon (${e.message})`);
  }
}

// The error a response that is not ok stands for (its body, `text`, in the one error shape).
function failure(res, text, path) {
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  if (res.status === 401) unauthorizedListeners.forEach((fn) => fn());
  const err = (parsed && parsed.error) || {};
  return new ApiError(res.status, err.type || 'http_error', err.message || `HTTP ${res.status} from ${path}`, err.details);
}

export async function request(method, path, body, extraHeaders = {}) {
  const res = await send(method, path, body, extraHeaders);
  const text = await res.text();
  if (!res.ok) throw failure(res, text, path);
  let parsed = null;
  try { parsed = text ? JSON.parse(text) : null; } catch { parsed = null; }
  return parsed ?? text;
}

export const get = (path) => request('GET', path);

// Result rows as JSON lines: the page's bulk read. Not compressed by the daemon (gzip of a
// 10,000-point job costs it more time than sending it on a fast link). Parsed as they arrive,
// the lines of each chunk in one go: a job of 100,000 points is 52 MB, which read whole and then
// parsed took the page's main thread for most of a second after it had all come, and held the
// text three times over (read, split, joined).
export async function getRows(path) {
  const res = await send('GET', path, undefined, {Accept: 'application/x-ndjson'});
  if (!res.ok) throw failure(res, await res.text(), path);
  const rows = [];
  const parse = (lines) => {
    const body = lines.trim();
    if (body) for (const r of JSON.parse(`[${body.split('\n').join(',')}]`)) rows.push(r);
  };
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let rest = '';
  for (;;) {
    let chunk;
    try {
      chunk = await reader.read();
    } catch (e) {
      throw new ApiError(0, 'unreachable', `the daemon stopped sending ${path} (${e.message})`);
    }
    const {value, done} = chunk;
    if (done) break;
    const text = rest + value, end = text.lastIndexOf('\n');
    if (end < 0) { rest = text; continue; }
    parse(text.slice(0, end));
    rest = text.slice(end + 1);
  }
  parse(rest);
  return rows;
}
export const post = (path, body, extra) => request('POST', path, body, extra);
// `delete` is a keyword; a 204 answers ''.
export const del = (path) => request('DELETE', path);

// Saves what `path` answers as a file (a fetch, not a link, so that the token goes along).
export async function download(path, filename) {
  const res = await fetch(path, {headers: headers({Accept: '*/*'})});
  if (!res.ok) throw new ApiError(res.status, 'http_error', `HTTP ${res.status} from ${path}`);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

// GET /api/v1/events read with fetch rather than EventSource, which cannot send a token.
// Reconnects by itself, resuming after the last event id it saw.
//
// One stream for every tab of the page in this browser: a browser opens six HTTP/1.1
// connections to a host at most, and each tab holding a stream of its own took one for good, so
// that a seventh tab never loaded and the others' requests waited behind their streams. The tab
// holding a Web Lock reads the stream and relays what it reads (events, its state, a 401) over a
// BroadcastChannel to the others; when it closes, the lock passes to another tab, which resumes
// after the last event it was relayed. Where a page has no Web Locks (one served over plain HTTP
// from another host than this one is not a secure context), each tab reads its own stream, and
// lets it go while the tab is hidden.
const SHARED = 'kernelscan-events';

export class EventStream {
  constructor(onEvent, onState) {
    this.onEvent = onEvent;  // ({type, id, data}) => void
    this.onState = onState;  // ('connecting' | 'live' | 'offline', detail) => void
    this.lastId = null;
    this.retryMs = 2000;
    this.controller = null;
    this.stopped = false;
    this.channel = null;  // to the other tabs, where the stream is shared
    this.leading = false;  // this tab reads the stream
    this.state = ['connecting', ''];
  }

  start() {
    if (navigator.locks && typeof BroadcastChannel === 'function') {
      this.channel = new BroadcastChannel(SHARED);
      this.channel.onmessage = (m) => this.relayed(m.data);
      this.report('connecting');
      this.channel.postMessage({kind: 'hello'});
      navigator.locks.request(SHARED, async () => {
        if (this.stopped) return;
        this.leading = true;
        await this.loop();
      });
      return;
    }
    document.addEventListener('visibilitychange', () => {
      if (document.hidden && this.controller) this.controller.abort();
    });
    this.loop();
  }

  stop() {
    this.stopped = true;
    if (this.controller) this.controller.abort();
    if (this.channel) this.channel.close();
  }

  report(state, detail = '') {
    this.state = [state, detail];
    this.onState(state, detail);
    if (this.leading) this.channel.postMessage({kind: 'state', state, detail});
  }

  unauthorized() {
    unauthorizedListeners.forEach((fn) => fn());
    if (this.leading) this.channel.postMessage({kind: 'unauthorized'});
  }

  // What the tab reading the stream relays.
  relayed(m) {
    if (!m || this.stopped) return;
    if (m.kind === 'hello') {
      if (this.leading) this.channel.postMessage({kind: 'state', state: this.state[0], detail: this.state[1]});
      return;
    }
    if (this.leading) return;
    if (m.kind === 'state') {
      this.state = [m.state, m.detail];
      this.onState(m.state, m.detail);
    } else if (m.kind === 'unauthorized') {
      unauthorizedListeners.forEach((fn) => fn());
    } else if (m.kind === 'event') {
      if (m.id !== null) this.lastId = m.id;
      this.onEvent({type: m.type, id: m.id, data: m.data});
    }
  }

  async loop() {
    while (!this.stopped) {
      if (!this.channel && document.hidden) {
        this.report('offline', 'paused while the tab is hidden');
        await new Promise((r) => {
          const shown = () => {
            if (document.hidden) return;
            document.removeEventListener('visibilitychange', shown);
            r();
          };
          document.addEventListener('visibilitychange', shown);
        });
      }
      this.report('connecting');
      this.controller = new AbortController();
      let detail = 'the event stream ended';
      try {
        const h = headers({Accept: 'text/event-stream'});
        if (this.lastId !== null) h['Last-Event-ID'] = this.lastId;
        const res = await fetch('/api/v1/events', {headers: h, signal: this.controller.signal});
        if (!res.ok) {
          if (res.status === 401) this.unauthorized();
          throw new Error(`HTTP ${res.status}`);
        }
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = '';
        for (;;) {
          const {value, done} = await reader.read();
          if (done) break;
          buffer += value;
          let end;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            this.dispatch(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
        }
      } catch (e) {
        if (this.stopped) return;
        detail = e.message;
      }
      this.report('offline', detail);
      await new Promise((r) => setTimeout(r, this.retryMs));
    }
  }

  dispatch(block) {
    let type = 'message', id = null, data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith('id: ')) id = line.slice(4);
      else if (line.startsWith('event: ')) type = line.slice(7);
      else if (line.startsWith('data: ')) data += line.slice(6);
      else if (line.startsWith('retry: ')) this.retryMs = Number(line.slice(7)) || this.retryMs;
    }
    if (id !== null) this.lastId = id;
    if (!data) return;  // a comment (keep-alive) or retry: line
    if (type === 'ready') this.report('live');
    let parsed;
    try { parsed = JSON.parse(data); } catch { return; }
    if (this.leading) this.channel.postMessage({kind: 'event', type, id, data: parsed});
    this.onEvent({type, id, data: parsed});
  }
}
