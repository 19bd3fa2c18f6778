// The page's script (/sift.js): the store seen through its model, over the store API.
// Served by StorePage from the binary; it is a Swift string so that nothing
// is read from disk or the network when the page loads.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
enum PageScript {
    static let text = #"""
// The page of `sift serve`: a store seen through its model. Everything it
// shows comes from the store API (/v1/...) and is put on the page as text
// (textContent, attributes, SVG text): never as HTML.
'use strict';

(() => {
  const meta = (name) => document.querySelector(`meta[name="${name}"]`)?.getAttribute('content') ?? '';
  const pageToken = meta('sift-page-token');
  const writable = meta('sift-writable') === 'true';
  const writes = new Set(['/v1/save', '/v1/batch-update', '/v1/batch-delete']);
  const defaultPageSize = 50;
  const exportLimit = 100000;
  const referenceDate = 978307200; // 2001-01-01T00:00:00Z in Unix seconds
  // This page's own name in the change feed: its saves come back there, and are not another client's.
  const pageOrigin = `page-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 10)}`;

  // ---- Elements -----------------------------------------------------------

  /** An element: attributes set as attributes (never as HTML), children as nodes or text. */
  function h(tag, attributes = {}, ...children) {
    const element = document.createElement(tag);
    setAttributes(element, attributes);
    append(element, children);
    return element;
  }

  /** An SVG element. */
  function s(tag, attributes = {}, ...children) {
    const element = document.createElementNS('http://www.w3.org/2000/svg', tag);
    setAttributes(element, attributes);
    append(element, children);
    return element;
  }

  function setAttributes(element, attributes) {
    for (const [name, value] of Object.entries(attributes)) {
      if (value === undefined || value === null || value === false) continue;
      if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
      else if (name === 'testid') element.setAttribute('data-testid', value);
      else element.setAttribute(name, value === true ? '' : String(value));
    }
  }

  function append(element, children) {
    for (const child of (Array.isArray(children) ? children.flat(Infinity) : [children])) {
      if (child === undefined || child === null || child === false) continue;
      element.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
  }

  function clear(element) {
    while (element.firstChild) element.firstChild.remove();
    return element;
  }

  // ---- The API ------------------------------------------------------------

  class Failure extends Error {
    constructor(status, body) {
      super(body?.message ?? `the server answered ${status}`);
      this.status = status;
      this.body = body ?? {};
    }
  }

  async function api(path, body) {
    const headers = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const bearer = sessionStorage.getItem('sift-bearer');
    if (bearer) headers.Authorization = `Bearer ${bearer}`;
    if (writes.has(path)) headers['X-Sift-Page-Token'] = pageToken;
    let response;
    try {
      response = await fetch(path, {
        method: body === undefined ? 'GET' : 'POST', headers, credentials: 'same-origin',
        body: body === undefined ? undefined : jsonText(body),
      });
    } catch (error) {
      throw new Failure(0, { code: 'unavailable', message: `the server cannot be reached (${error.message})` });
    }
    let answer = null;
    try { answer = jsonValue(await response.text()); } catch { answer = null; }
    if (response.status === 401) {
      showTokenForm();
      throw new Failure(401, answer);
    }
    if (!response.ok) throw new Failure(response.status, answer);
    return answer;
  }

  // The API's integers are 64 bits. Where the browser lets a reviver see a number's text and write raw
  // JSON (JSON.rawJSON), one beyond 2^53 is read as a BigInt and written back as its digits, exactly, so a
  // save never sends back an integer64 it read rounded.
  const exactIntegers = typeof JSON.rawJSON === 'function';

  /** JSON text as values: an integer a double cannot hold exactly as a BigInt. */
  function jsonValue(text) {
    return JSON.parse(text, (key, value, context) => (exactIntegers && typeof value === 'number' && !Number.isSafeInteger(value)
      && typeof context?.source === 'string' && /^-?\d+$/.test(context.source) ? BigInt(context.source) : value));
  }

  /** Values as JSON text: a BigInt as its digits. */
  function jsonText(value) {
    return JSON.stringify(value, (key, member) => (typeof member === 'bigint' ? JSON.rawJSON(String(member)) : member));
  }

  // ---- The model ----------------------------------------------------------

  const model = { entities: new Map(), roots: [] };

  /** Entities with what they inherit, subentities under their parents. */
  function readModel(json) {
    for (const entity of json.entities ?? []) {
      model.entities.set(entity.name, {
        name: entity.name, superentity: entity.superentity ?? null, abstract: !!entity.abstract,
        own: entity, attributes: [], relationships: [], subentities: [],
      });
    }
    const resolve = (entity, seen = new Set()) => {
      if (entity.resolved || seen.has(entity.name)) return entity;
      seen.add(entity.name);
      const parent = entity.superentity && model.entities.get(entity.superentity);
      const inherited = parent ? resolve(parent, seen) : null;
      const elements = (attribute) => (attribute.elements ?? []).map((e) => ({ ...e, name: `${attribute.name}.${e.name}` }));
      const own = (entity.own.attributes ?? []).flatMap((a) => (a.type === 'composite' ? elements(a) : [a]));
      entity.attributes = [...(inherited?.attributes ?? []), ...own.filter((a) => !a.transient)];
      entity.relationships = [...(inherited?.relationships ?? []), ...(entity.own.relationships ?? []).filter((r) => !r.transient)];
      entity.resolved = true;
      return entity;
    };
    for (const entity of model.entities.values()) {
      resolve(entity);
      const parent = entity.superentity && model.entities.get(entity.superentity);
      if (parent) parent.subentities.push(entity); else model.roots.push(entity);
    }
  }

  const entityNamed = (name) => model.entities.get(name);

  /** The property a key path names, from `entity` (through to-one and to-many relationships). */
  function walk(entity, path) {
    let current = entity;
    let property = null;
    const keys = path.split('.');
    for (let i = 0; i < keys.length && current; i++) {
      const rest = keys.slice(i).join('.');
      const attribute = current.attributes.find((a) => a.name === rest) ?? current.attributes.find((a) => a.name === keys[i]);
      if (attribute) return { attribute, entity: current };
      property = current.relationships.find((r) => r.name === keys[i]);
      if (!property) return null;
      current = entityNamed(property.destination);
    }
    return property ? { relationship: property, entity: current } : null;
  }

  // ---- Values, as text ----------------------------------------------------

  function tagOf(value) {
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      const keys = Object.keys(value);
      if (keys.length === 1) return keys[0];
    }
    return null;
  }

  /** ISO 8601 text of seconds since 2001 (a date in the typed form's older spelling). */
  function dateText(seconds) {
    const date = new Date((seconds + referenceDate) * 1000);
    if (Number.isNaN(date.getTime())) return String(seconds);
    return date.toISOString().replace('.000Z', 'Z');
  }

  /** The digits of 1 - 0.digits (for digits that do not end in 0). */
  function complement(digits) {
    return [...digits].map((c, i) => String((i === digits.length - 1 ? 10 : 9) - Number(c))).join('');
  }

  /**
   * A date's seconds since 2001 from its ISO 8601 text, read as the server reads it: the decimal the
   * text is, rounded once, so the API's dates (whose digits are exactly their stored seconds) come out
   * as the server holds them, to the bit. NaN for text that is not a date.
   */
  function dateSeconds(text) {
    const match = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:?\d{2})$/.exec(String(text).trim());
    if (!match) {
      const parsed = Date.parse(text);
      return Number.isNaN(parsed) ? Number.NaN : parsed / 1000 - referenceDate;
    }
    const [, year, month, day, hour, minute, second, fraction = '', zone] = match;
    const midnight = new Date(0);
    midnight.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
    let offset = 0;
    if (zone.toUpperCase() !== 'Z') {
      const digits = zone.slice(1).replace(':', '');
      offset = (zone[0] === '-' ? -1 : 1) * (Number(digits.slice(0, 2)) * 3600 + Number(digits.slice(2)) * 60);
    }
    const whole = midnight.getTime() / 1000 - referenceDate + Number(hour) * 3600 + Number(minute) * 60 + Number(second) - offset;
    const digits = fraction.replace(/0+$/, '');
    if (!digits) return whole;
    return whole >= 0 ? Number(`${whole}.${digits}`) : Number(`-${-whole - 1}.${complement(digits)}`);
  }

  /** A date value's text: the API writes ISO 8601; seconds since 2001 (the older form) become ISO 8601. */
  function isoText(date) {
    return typeof date === 'number' ? dateText(date) : String(date);
  }

  function base64Bytes(text) {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }

  /**
   * A value in the typed form, whatever form it came in: an attribute's value comes plain (its type in
   * the model says what a string or a number is), a dictionary's or an argument's typed.
   */
  function typed(value, attribute) {
    if (typeof value !== 'string' || !attribute) return value;
    switch (attribute.type) {
      case 'date': return { date: value };
      case 'binary': case 'transformable': return { data: value };
      case 'uuid': return { uuid: value };
      default: return value;
    }
  }

  /** A value as plain text (exports, titles, editing). */
  function plain(value) {
    if (value === null || value === undefined) return '';
    switch (tagOf(value)) {
      case 'date': return isoText(value.date);
      case 'double': return String(value.double);
      case 'uuid': return value.uuid;
      case 'data': return value.data;
      case 'object': return `${value.object.entity} ${value.object.id}`;
      case 'dictionary': return jsonText(value.dictionary);
      default: return typeof value === 'object' ? jsonText(value) : String(value);
    }
  }

  /** A value as the page shows it: by type, nil distinct from empty, binary as its size with a download link. */
  function shown(value, attribute, label) {
    if (value === null || value === undefined) return h('span', { class: 'nil', title: 'nil (no value)' }, 'nil');
    value = typed(value, attribute);
    if (value === '') return h('span', { class: 'empty', title: 'an empty string' }, '""');
    switch (tagOf(value)) {
      case 'date': return h('time', { class: 'date', datetime: typeof value.date === 'string' ? value.date : undefined }, plain(value));
      case 'double': return h('span', { class: 'number' }, String(value.double));
      case 'uuid': return h('span', { class: 'uuid' }, value.uuid);
      case 'data': {
        const bytes = base64Bytes(value.data);
        const plist = bytes.length >= 8 && String.fromCharCode(...bytes.slice(0, 8)) === 'bplist00';
        const kind = (attribute?.type === 'transformable' ? 'transformable, ' : '') + (plist ? 'a binary property list, ' : '');
        const link = h('a', { href: '#', class: 'download', title: 'download the bytes' }, `${bytes.length} bytes`);
        link.addEventListener('click', (event) => {
          event.preventDefault();
          download(bytes, `${label ?? 'value'}.bin`, 'application/octet-stream');
        });
        const preview = Array.from(bytes.slice(0, 8), (b) => b.toString(16).padStart(2, '0')).join(' ');
        return h('span', { class: 'binary' }, link, ` (${kind}${preview}${bytes.length > 8 ? ' …' : ''})`);
      }
      case 'object': return h('span', { class: 'reference' }, plain(value));
      default: break;
    }
    if (typeof value === 'boolean') return h('span', { class: 'boolean' }, String(value));
    if (typeof value === 'number' || typeof value === 'bigint') return h('span', { class: 'number' }, String(value));
    if (typeof value === 'string') {
      const text = value.length > 160 ? `${value.slice(0, 160)}…` : value;
      return h('span', { class: 'string', title: value.length > 160 ? value : undefined }, text);
    }
    return h('code', { class: 'structured' }, jsonText(value));
  }

  function download(content, name, type) {
    const url = URL.createObjectURL(new Blob([content], { type }));
    const link = h('a', { href: url, download: name, class: 'hidden' });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  }

  // ---- State, in the URL --------------------------------------------------

  const state = {
    view: 'objects', entity: null, predicate: '', sort: [], page: 0, cursors: [null], size: defaultPageSize,
    columns: null, facet: '', object: null, of: null, group: { by: '', fn: 'count', attribute: '' }, historyBefore: null,
  };

  function readURL() {
    const query = new URLSearchParams(location.search);
    state.view = query.get('view') ?? 'objects';
    state.entity = query.get('entity');
    state.predicate = query.get('predicate') ?? '';
    state.sort = (query.get('sort') ?? '').split(',').filter(Boolean).map((part) => {
      const [keyPath, direction] = part.split(':');
      return { keyPath, ascending: direction !== 'desc' };
    });
    const object = query.get('object');
    state.object = object ? { entity: state.entity, key: Number(object) } : null;
    const of = query.get('of');
    if (of) {
      const [entity, key, relationship] = of.split(':');
      state.of = { entity, key: Number(key), relationship };
    } else state.of = null;
    state.group = { by: query.get('group') ?? '', fn: query.get('fn') ?? 'count', attribute: query.get('of-attribute') ?? '' };
    // The columns shown (all when absent), the facet's key path, the page size and the page (1 first).
    state.columns = query.has('columns') ? query.get('columns').split(',').filter(Boolean) : null;
    state.facet = query.get('facet') ?? '';
    const size = Number(query.get('size'));
    state.size = Number.isInteger(size) && size >= 1 && size <= 1000 ? size : defaultPageSize;
    const page = Number(query.get('page'));
    state.page = Number.isInteger(page) && page > 1 ? page - 1 : 0;
    state.cursors = [null];
  }

  function writeURL(push) {
    const query = new URLSearchParams();
    if (state.view !== 'objects') query.set('view', state.view);
    if (state.entity) query.set('entity', state.entity);
    if (state.object) query.set('object', String(state.object.key));
    if (state.of) query.set('of', `${state.of.entity}:${state.of.key}:${state.of.relationship}`);
    if (state.predicate) query.set('predicate', state.predicate);
    if (state.sort.length) query.set('sort', state.sort.map((k) => `${k.keyPath}:${k.ascending ? 'asc' : 'desc'}`).join(','));
    if (state.columns) query.set('columns', state.columns.join(','));
    if (state.facet) query.set('facet', state.facet);
    if (state.size !== defaultPageSize) query.set('size', String(state.size));
    if (state.page > 0 && state.view === 'objects' && !state.object) query.set('page', String(state.page + 1));
    if (state.group.by) {
      query.set('group', state.group.by);
      query.set('fn', state.group.fn);
      if (state.group.attribute) query.set('of-attribute', state.group.attribute);
    }
    const url = `${location.pathname}${query.toString() ? `?${query}` : ''}`;
    if (url !== `${location.pathname}${location.search}`) history[push ? 'pushState' : 'replaceState'](null, '', url);
  }

  function go(changes) {
    // Another entity has other columns and key paths: its table starts with all of them and no facet.
    const entityChanges = changes.entity !== undefined && changes.entity !== state.entity;
    Object.assign(state, { page: 0, cursors: [null] }, entityChanges ? { columns: null, facet: '' } : {}, changes);
    writeURL(true);
    render();
  }

  // ---- The frame ----------------------------------------------------------

  const frame = {};

  function buildFrame(store) {
    frame.status = h('span', { class: 'status', testid: 'status', role: 'status' });
    frame.entities = h('ul', { class: 'entities', testid: 'entity-list' });
    frame.main = h('main', { class: 'main', testid: 'main' });
    const modeText = store.writable ? 'read-write' : 'read-only';
    document.body.append(
      h('header', { class: 'top' },
        h('a', { class: 'brand', href: '/' }, 'Sift'),
        // The store's name (its file, its schema) as the server was told it; its identifier as the tooltip.
        h('span', { class: 'store', testid: 'store-name', title: store.identifier }, meta('sift-store-name') || store.identifier),
        h('span', { class: `mode ${modeText}`, testid: 'mode' }, modeText),
        frame.status),
      h('div', { class: 'layout' },
        h('nav', { class: 'sidebar', 'aria-label': 'entities' },
          h('h2', {}, 'Entities'), frame.entities,
          h('h2', {}, 'Store'),
          h('ul', { class: 'links' },
            h('li', {}, h('a', { href: '?view=diagram', testid: 'show-diagram', onclick: link({ view: 'diagram', entity: null, object: null }) }, 'Model diagram')),
            h('li', {}, h('a', { href: '?view=history', testid: 'show-history', onclick: link({ view: 'history', entity: null, object: null }) }, 'History')))),
        frame.main));
  }

  /** A click handler that goes to a view (a link that still opens in a new tab). */
  function link(changes) {
    return (event) => {
      if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
      event.preventDefault();
      go(changes);
    };
  }

  function status(text, isError) {
    frame.status.textContent = text;
    frame.status.classList.toggle('error', !!isError);
  }

  function failureBox(error) {
    return h('div', { class: 'failure', testid: 'failure', role: 'alert' }, error.message);
  }

  function showTokenForm() {
    if (document.querySelector('[data-testid="token-form"]')) return;
    const input = h('input', { type: 'password', testid: 'token-input', placeholder: 'bearer token', autocomplete: 'off' });
    const form = h('form', { class: 'token-form', testid: 'token-form' },
      h('label', {}, 'This server asks for its bearer token: ', input), h('button', { type: 'submit' }, 'Use'));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      sessionStorage.setItem('sift-bearer', input.value);
      location.reload();
    });
    document.body.prepend(form);
  }

  // ---- The sidebar: entities with their counts ----------------------------

  function renderEntities() {
    clear(frame.entities);
    const item = (entity) => {
      const count = h('span', { class: 'count', testid: `count-${entity.name}` }, '…');
      const anchor = h('a', {
        href: `?entity=${encodeURIComponent(entity.name)}`, class: entity.name === state.entity ? 'current' : undefined,
        onclick: link({ view: 'objects', entity: entity.name, predicate: '', sort: [], object: null, of: null, group: { by: '', fn: 'count', attribute: '' } }),
      }, entity.name);
      const li = h('li', { testid: `entity-${entity.name}` }, anchor, ' ', count);
      if (entity.abstract) li.classList.add('abstract');
      if (entity.subentities.length) li.append(h('ul', {}, entity.subentities.map(item)));
      frame.counts.set(entity.name, count);
      return li;
    };
    frame.counts = new Map();
    append(frame.entities, model.roots.map(item));
    refreshCounts();
  }

  /** Each entity's count in the sidebar, read again. */
  function refreshCounts() {
    for (const [name, count] of frame.counts) {
      api('/v1/fetch', { entity: name, result: 'count' })
        .then((answer) => { count.textContent = String(answer.count); })
        .catch(() => { count.textContent = '?'; });
    }
  }

  // ---- Other clients' saves, from the change feed ---------------------------

  /** Follows the server's change feed (long polls) and brings what is shown up to date. */
  async function follow(token) {
    let after = token;
    for (;;) {
      try {
        const feed = await api(`/v1/changes?after=${encodeURIComponent(after)}&wait=25`);
        after = feed.token;
        const touched = new Set(feed.reset ? ['*'] : []);
        for (const change of feed.changes.filter((c) => c.origin !== pageOrigin)) {
          for (const key of [...change.inserted, ...change.updated, ...change.deleted]) touched.add(`${key.entity}:${key.key}`);
        }
        if (touched.size) changed(touched);
      } catch (error) {
        await new Promise((resolve) => { setTimeout(resolve, 5000); });
        if (error.status === 400) {
          try { after = (await api('/v1/store')).token; } catch { /* the server is away: try again later */ }
        }
      }
    }
  }

  function changed(touched) {
    refreshCounts();
    const all = touched.has('*');
    const entities = new Set([...touched].map((k) => k.split(':')[0]));
    const shown = state.entity && entityNamed(state.entity);
    if (!shown) return;
    const relevant = all || [...entities].some((name) => isKindOf(name, shown.name) || isKindOf(shown.name, name));
    if (!relevant) return;
    if (state.view === 'objects' && !state.object && frame.reloadObjects) {
      frame.reloadObjects();
      status(`updated ${new Date().toLocaleTimeString()}: another save changed ${shown.name} objects`);
    } else if (state.object && (all || [...touched].some((k) => k.endsWith(`:${state.object.key}`) && isKindOf(k.split(':')[0], shown.name)))) {
      const box = document.querySelector('[data-testid="object-view"]');
      if (box && !box.querySelector('[data-testid="object-changed"]')) {
        box.prepend(h('div', { class: 'notice', testid: 'object-changed', role: 'status' },
          'Another save changed this object since it was shown. ',
          h('button', { type: 'button', onclick: () => render() }, 'Show it as stored')));
      }
    }
  }

  function markCurrentEntity() {
    for (const anchor of frame.entities.querySelectorAll('a')) {
      anchor.classList.toggle('current', anchor.textContent === state.entity && state.view === 'objects');
    }
  }

  // ---- Rendering ----------------------------------------------------------

  function render() {
    frame.reloadObjects = null;
    markCurrentEntity();
    clear(frame.main);
    if (state.view === 'diagram') return renderDiagram();
    if (state.view === 'history') return renderHistory();
    const entity = state.entity && entityNamed(state.entity);
    if (!entity) return renderWelcome();
    if (state.object) return renderObject(entity, state.object.key);
    return renderObjects(entity);
  }

  function renderWelcome() {
    append(frame.main, [
      h('h1', {}, 'A store, through its model'),
      h('p', {}, 'Choose an entity to see its objects, filter them with a predicate in the Cocoa format language, ',
        'follow relationships, see the SQL a predicate becomes, and group them into a chart.'),
    ]);
    renderDiagram();
  }

  // ---- Objects: the predicate box, the table, the pages ---------------------

  let requestNumber = 0;

  /** The fetch's predicate and arguments: the box's, and the relationship the table is scoped to. */
  function scope(entity) {
    const terms = [];
    const args = [];
    if (state.predicate.trim()) terms.push(`(${state.predicate})`);
    if (state.of) {
      const owner = entityNamed(state.of.entity);
      const relationship = owner?.relationships.find((r) => r.name === state.of.relationship);
      const inverse = relationship?.inverse && entity.relationships.find((r) => r.name === relationship.inverse);
      const object = { object: { entity: state.of.entity, id: state.of.key } };
      if (inverse && !inverse.toMany) { terms.push(`${inverse.name} == %@`); args.push(object); }
      else if (inverse) { terms.push(`ANY ${inverse.name} == %@`); args.push(object); }
      else if (state.of.members) { terms.push('SELF IN %@'); args.push(state.of.members.map((id) => ({ object: { entity: entity.name, id } }))); }
    }
    // The box's text alone is sent as typed, so that a diagnostic's place is the box's.
    if (terms.length === 1 && !state.of) return { predicate: state.predicate, arguments: args };
    return { predicate: terms.length ? terms.join(' AND ') : undefined, arguments: args };
  }

  function renderObjects(entity) {
    const input = h('input', {
      type: 'text', class: 'predicate', testid: 'predicate-input', spellcheck: 'false', autocomplete: 'off',
      'aria-label': 'predicate', placeholder: examplePredicate(entity), value: state.predicate,
    });
    const completions = h('ul', { class: 'completions', testid: 'completions', role: 'listbox', hidden: true });
    const diagnostic = h('pre', { class: 'diagnostic', testid: 'diagnostic', role: 'alert', hidden: true });
    const suggestion = h('div', { class: 'suggestion', hidden: true });
    const count = h('span', { class: 'result-count', testid: 'result-count' }, '…');
    const table = h('table', { class: 'results', testid: 'results-table' });
    const pager = h('div', { class: 'pager', testid: 'pager' });
    const panel = h('div', { class: 'panel' });
    const tableWrap = h('div', { class: 'table-wrap', testid: 'table-wrap' }, table);
    const facets = h('div', { class: 'facets', testid: 'facets', hidden: true });
    let shownScope = null; // the predicate and arguments of the rows shown (for the facets, when one is chosen)
    const heading = h('h1', {}, entity.name, entity.abstract ? h('span', { class: 'note' }, ' (abstract)') : null);
    const scopeNote = state.of ? h('p', { class: 'scope', testid: 'scope' }, `The ${state.of.relationship} of `,
      h('a', { href: '#', onclick: link({ entity: state.of.entity, object: { entity: state.of.entity, key: state.of.key }, of: null, predicate: '', sort: [] }) },
        `${state.of.entity} ${state.of.key}`), ' ',
      h('a', { href: '#', class: 'remove', onclick: link({ of: null }) }, '(all)')) : null;

    const buttons = h('div', { class: 'actions' },
      h('button', { type: 'button', testid: 'explain-button', onclick: () => showExplain(entity, panel) }, 'Explain'),
      h('button', { type: 'button', testid: 'group-button', onclick: () => showGroups(entity, panel) }, 'Group'),
      h('button', { type: 'button', testid: 'export-jsonl', onclick: () => exportView(entity, 'jsonl') }, 'Export JSON lines'),
      h('button', { type: 'button', testid: 'export-csv', onclick: () => exportView(entity, 'csv') }, 'Export CSV'),
      writable && !entity.abstract
        ? h('button', { type: 'button', testid: 'insert-button', onclick: () => renderNewObject(entity) }, `New ${entity.name}`) : null);

    const controls = h('div', { class: 'view-controls' },
      columnsControl(entity, () => turnPage(state.page)),
      facetControl(entity, () => { if (shownScope) showFacets(entity, facets, shownScope, addTerm); }));

    append(frame.main, [heading, scopeNote,
      h('div', { class: 'query' },
        h('div', { class: 'predicate-box' }, input, completions), diagnostic, suggestion,
        h('div', { class: 'summary' }, count, buttons), controls),
      facets, panel, tableWrap, pager]);

    let timer = null;
    const refresh = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        state.predicate = input.value;
        state.page = 0;
        state.cursors = [null];
        writeURL(false);
        load();
        // An open panel (Explain, Groups) follows the predicate: it never shows another one's answer.
        panel.follow?.();
      }, 200);
    };

    /** The page `page` of the rows shown, with their count (`total`): from the pager and the Columns control. */
    let shownTotal = 0;
    const turnPage = (page) => {
      if (!shownScope) return;
      state.page = page;
      writeURL(false);
      const number = ++requestNumber;
      disablePager(pager);
      loadPage(entity, table, pager, shownScope, shownTotal, () => number === requestNumber, turnPage)
        .catch((error) => { if (number === requestNumber) report(error); });
    };

    /** A facet's value chosen: its term joins the predicate (AND), and everything follows. */
    const addTerm = (term) => {
      const current = input.value.trim();
      // AND binds tighter than OR: a predicate with an OR is kept whole in parentheses.
      const kept = /\bOR\b|\|\|/i.test(current) ? `(${current})` : current;
      input.value = current ? `${kept} AND ${term}` : term;
      clearTimeout(timer);
      state.predicate = input.value;
      state.page = 0;
      state.cursors = [null];
      writeURL(true);
      load();
      panel.follow?.();
    };

    const load = async () => {
      const number = ++requestNumber;
      // Until this predicate's rows come, the pager's buttons (of the rows shown) do nothing.
      disablePager(pager);
      try {
        await membersIfNeeded(entity);
        const { predicate, arguments: args } = scope(entity);
        const counted = await api('/v1/fetch', { entity: entity.name, predicate, arguments: args, result: 'count' });
        if (number !== requestNumber) return;
        diagnostic.hidden = true;
        suggestion.hidden = true;
        input.classList.remove('invalid');
        count.textContent = `${counted.count} ${counted.count === 1 ? 'object' : 'objects'}`;
        count.dataset.count = String(counted.count);
        shownScope = { predicate, arguments: args };
        shownTotal = counted.count;
        showFacets(entity, facets, shownScope, addTerm);
        await loadPage(entity, table, pager, shownScope, counted.count, () => number === requestNumber, turnPage);
        tableWrap.classList.remove('stale');
      } catch (error) {
        if (number !== requestNumber) return;
        // The rows, pages and facets shown are another predicate's: they go (the table says why).
        shownScope = null;
        emptyTable(table, pager, tableWrap, facets);
        if (error.body?.code === 'invalid_predicate' || error.body?.code === 'bad_request' || error.body?.code === 'too_costly') {
          showDiagnostic(error, input, diagnostic, suggestion, () => refresh());
          count.textContent = 'invalid predicate';
          delete count.dataset.count;
        } else {
          count.textContent = error.message;
        }
      }
    };

    // The list closes a moment after the box loses focus (so a click on it lands), unless the box has it
    // again by then: a blur and a quick return must not hide the list the return opened.
    let closing = null;
    input.addEventListener('input', () => { clearTimeout(closing); refresh(); complete(entity, input, completions); });
    input.addEventListener('keydown', (event) => completionKeys(event, input, completions, refresh));
    input.addEventListener('blur', () => { closing = setTimeout(() => { completions.hidden = true; }, 150); });
    input.addEventListener('focus', () => { clearTimeout(closing); complete(entity, input, completions); });
    frame.reloadObjects = load;
    load();
    if (state.group.by) showGroups(entity, panel);
  }

  /** For a relationship with no inverse, the members' keys, read once. */
  async function membersIfNeeded(entity) {
    if (!state.of || state.of.members) return;
    const owner = entityNamed(state.of.entity);
    const relationship = owner?.relationships.find((r) => r.name === state.of.relationship);
    if (!relationship || relationship.inverse) return;
    const answer = await api('/v1/destinations', { entity: state.of.entity, relationship: state.of.relationship, owners: [state.of.key] });
    state.of.members = answer.links[0]?.members ?? [];
    void entity;
  }

  function examplePredicate(entity) {
    const attribute = entity.attributes.find((a) => a.type === 'string') ?? entity.attributes[0];
    if (!attribute) return 'TRUEPREDICATE';
    return attribute.type === 'string' ? `${attribute.name} BEGINSWITH[c] 'a'` : `${attribute.name} != nil`;
  }

  function showDiagnostic(error, input, diagnostic, suggestion, refresh) {
    const detail = error.body?.diagnostic;
    input.classList.add('invalid');
    diagnostic.hidden = false;
    diagnostic.textContent = detail?.rendered ?? error.message;
    clear(suggestion);
    suggestion.hidden = true;
    const offset = state.of ? 1 : 0; // with a relationship's scope, the box's text is wrapped in parentheses
    if (detail?.replacement && detail.start !== undefined && detail.end !== undefined) {
      const start = detail.start - offset;
      const end = detail.end - offset;
      if (start >= 0 && end <= input.value.length) {
        suggestion.hidden = false;
        append(suggestion, [detail.hint ? `${detail.hint} ` : '',
          h('button', {
            type: 'button', testid: 'apply-suggestion', onclick: () => {
              input.value = input.value.slice(0, start) + detail.replacement + input.value.slice(end);
              input.focus();
              refresh();
            },
          }, `Use ${detail.replacement}`)]);
      }
    }
    if (detail?.start !== undefined) {
      const start = Math.max(0, Math.min(input.value.length, detail.start - offset));
      input.setAttribute('data-error-at', String(start));
    }
  }

  // Completion of key paths, through relationships, at the caret.
  function complete(entity, input, list) {
    const caret = input.selectionStart ?? input.value.length;
    const before = input.value.slice(0, caret);
    const match = /[A-Za-z_][A-Za-z0-9_.]*$/.exec(before);
    clear(list);
    if (!match) { list.hidden = true; return; }
    const path = match[0].split('.');
    const partial = path.pop();
    let current = entity;
    for (const key of path) {
      const relationship = current?.relationships.find((r) => r.name === key);
      current = relationship && entityNamed(relationship.destination);
    }
    if (!current) { list.hidden = true; return; }
    const names = [
      ...current.attributes.map((a) => ({ name: a.name, kind: a.type })),
      ...current.relationships.map((r) => ({ name: r.name, kind: `${r.toMany ? 'to-many' : 'to-one'} ${r.destination}` })),
    ].filter((p) => p.name.toLowerCase().startsWith(partial.toLowerCase()) && p.name !== partial);
    if (!names.length) { list.hidden = true; return; }
    names.slice(0, 12).forEach((property, index) => {
      const option = h('li', { role: 'option', class: index === 0 ? 'selected' : undefined, testid: `completion-${property.name}` },
        h('span', { class: 'name' }, property.name), h('span', { class: 'kind' }, property.kind));
      option.addEventListener('mousedown', (event) => {
        event.preventDefault();
        accept(input, list, property.name);
      });
      option.dataset.name = property.name;
      list.append(option);
    });
    list.dataset.start = String(caret - partial.length);
    list.hidden = false;
  }

  function accept(input, list, name) {
    const start = Number(list.dataset.start);
    const caret = input.selectionStart ?? input.value.length;
    input.value = input.value.slice(0, start) + name + input.value.slice(caret);
    const at = start + name.length;
    input.setSelectionRange(at, at);
    list.hidden = true;
    input.dispatchEvent(new Event('input'));
  }

  function completionKeys(event, input, list, refresh) {
    if (event.key === 'Enter' && list.hidden) { refresh(); return; }
    if (list.hidden) return;
    const options = [...list.children];
    const selected = options.findIndex((o) => o.classList.contains('selected'));
    if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
      event.preventDefault();
      const next = (selected + (event.key === 'ArrowDown' ? 1 : options.length - 1)) % options.length;
      options.forEach((o, i) => o.classList.toggle('selected', i === next));
    } else if (event.key === 'Tab' || event.key === 'Enter') {
      event.preventDefault();
      accept(input, list, options[Math.max(selected, 0)].dataset.name);
    } else if (event.key === 'Escape') {
      list.hidden = true;
    }
  }

  // The table, a page at a time. First, Next and Previous page by keyset: the cursor (`after`) the server
  // answered the page before with, kept in state.cursors[page] (null: the first page; undefined: not known).
  // A page whose cursor is not known (a jump to page N, Last, Previous after a jump, a link with page=N) is
  // fetched by `offset`: correct whatever the sort, since the store orders ties by primary key as keyset
  // pages do, and it costs the rows skipped, once. (Last by the reversed sort would be cheaper but wrong: a
  // run of ties keeps its key order when the sort is reversed, so the rows would not be the last page's.)
  // The offset fetch asks for the row before the page too: the answer's cursor counts the ties with the
  // page's last row among the rows it returned only, so it can be trusted, and Next stays keyset, when that
  // row is known not to tie with the last one; else Next goes by offset as well.
  async function loadPage(entity, table, pager, scoped, total, isCurrent = () => true, turn = null) {
    const size = state.size;
    const pages = Math.max(1, Math.ceil(total / size));
    if (state.page >= pages) {
      state.page = pages - 1;
      writeURL(false);
    }
    const body = {
      entity: entity.name, predicate: scoped.predicate, arguments: scoped.arguments,
      sort: state.sort, limit: size, prefetch: entity.relationships.filter((r) => !r.toMany).map((r) => r.name),
    };
    const cursor = state.cursors[state.page];
    const byOffset = state.page > 0 && !cursor;
    if (cursor) body.after = cursor;
    else if (byOffset) {
      body.offset = state.page * size - 1;
      body.limit = size + 1;
    }
    const answer = await api('/v1/fetch', body);
    if (!isCurrent()) return;
    let rows = answer.objects ?? [];
    const related = new Map((answer.related ?? []).map((row) => [`${row.entity}:${row.key}`, row]));
    let next = answer.next ?? null;
    if (byOffset) {
      const before = rows[0];
      rows = rows.slice(1);
      if (next && !(before && rows.length && sortValuesDiffer(entity, before, rows[rows.length - 1], related))) next = undefined;
    }
    state.cursors[state.page + 1] = next;
    const chosen = (name) => !state.columns || state.columns.includes(name);
    const toMany = entity.relationships.filter((r) => r.toMany && chosen(r.name));
    const counts = new Map();
    await Promise.all(toMany.map(async (relationship) => {
      if (!rows.length) return;
      try {
        const links = await api('/v1/destinations', { entity: entity.name, relationship: relationship.name, owners: rows.map((r) => r.key) });
        for (const l of links.links) counts.set(`${relationship.name}:${l.owner}`, l.members.length);
      } catch { /* a subentity's relationship: no counts */ }
    }));
    if (!isCurrent()) return;
    drawTable(entity, table, rows, related, counts);
    drawPager(pager, total, rows.length, turn);
  }

  /** Whether two rows are known not to tie under the sort: a sort value (an attribute, or one through a to-one
   * relationship read with the page) that differs. With no sort every row ties (the server pages by count). */
  function sortValuesDiffer(entity, a, b, related) {
    const valueAt = (row, keyPath) => {
      if (entity.attributes.some((x) => x.name === keyPath)) return row.values?.[keyPath] ?? null;
      const [name, ...rest] = keyPath.split('.');
      const relationship = entity.relationships.find((r) => r.name === name && !r.toMany);
      if (!relationship || !rest.length) return undefined;
      const key = row.toOne?.[name];
      if (key === undefined || key === null) return null;
      const target = related.get(`${relationship.destination}:${key}`)
        ?? [...related.values()].find((r) => r.key === key && isKindOf(r.entity, relationship.destination));
      const attribute = rest.join('.');
      if (!target || !entityNamed(target.entity)?.attributes.some((x) => x.name === attribute)) return undefined;
      return target.values?.[attribute] ?? null;
    };
    return state.sort.some(({ keyPath }) => {
      const x = valueAt(a, keyPath);
      const y = valueAt(b, keyPath);
      return x !== undefined && y !== undefined && jsonText(x) !== jsonText(y);
    });
  }

  /** A table cell's content, cut to the column's width with an ellipsis; the full text as its title. */
  function cell(content, title) {
    // A date is short and is not cut.
    return h('div', { class: content.classList?.contains('date') ? 'cell whole' : 'cell', title: title || undefined }, content);
  }

  /** A value's full text for a cell's title (none for bytes, which have their own). */
  function titleOf(value, attribute) {
    if (value === null || value === undefined || tagOf(typed(value, attribute)) === 'data') return undefined;
    const text = plain(value);
    return text.length > 10000 ? `${text.slice(0, 10000)}…` : text;
  }

  function drawTable(entity, table, rows, related, counts) {
    clear(table);
    const chosen = (name) => !state.columns || state.columns.includes(name);
    const attributes = entity.attributes.filter((a) => chosen(a.name));
    const relationships = entity.relationships.filter((r) => chosen(r.name));
    const header = h('tr', {}, h('th', { class: 'key' }, 'key'));
    for (const attribute of attributes) {
      const sorted = state.sort.find((k) => k.keyPath === attribute.name);
      const sortable = !['binary', 'transformable', 'undefined', 'objectID'].includes(attribute.type);
      const th = h('th', { class: sortable ? 'sortable' : undefined, title: attribute.type, testid: `column-${attribute.name}` },
        attribute.name, sorted ? h('span', { class: 'arrow' }, sorted.ascending ? ' ▲' : ' ▼') : null);
      if (sortable) {
        th.addEventListener('click', () => {
          const ascending = sorted ? !sorted.ascending : true;
          go({ sort: [{ keyPath: attribute.name, ascending }] });
        });
      }
      header.append(th);
    }
    for (const relationship of relationships) {
      header.append(h('th', { class: 'relationship', testid: `column-${relationship.name}`, title: `${relationship.toMany ? 'to-many' : 'to-one'} ${relationship.destination}` }, relationship.name));
    }
    table.append(h('thead', {}, header));
    const body = h('tbody');
    for (const row of rows) {
      const open = link({ entity: row.entity, object: { entity: row.entity, key: row.key }, of: null, predicate: '', sort: [] });
      const tr = h('tr', { testid: `row-${row.key}` },
        h('td', { class: 'key' }, h('a', { href: `?entity=${encodeURIComponent(row.entity)}&object=${row.key}`, onclick: open, testid: `open-${row.key}` },
          String(row.key)), row.entity !== entity.name ? h('span', { class: 'subentity' }, ` ${row.entity}`) : null));
      for (const attribute of attributes) {
        const value = row.values[attribute.name] ?? null;
        tr.append(h('td', {}, cell(shown(value, attribute, `${row.entity}-${row.key}-${attribute.name}`), titleOf(value, attribute))));
      }
      for (const relationship of relationships) {
        const content = relationshipCell(row, relationship, related, counts);
        tr.append(h('td', { class: 'relationship' }, cell(content, content.textContent)));
      }
      body.append(tr);
    }
    if (!rows.length) body.append(h('tr', {}, h('td', { colspan: attributes.length + relationships.length + 1, class: 'none' }, 'No objects.')));
    table.append(body);
  }

  function relationshipCell(row, relationship, related, counts) {
    if (!relationship.toMany) {
      const key = row.toOne?.[relationship.name];
      if (key === undefined || key === null) return h('span', { class: 'nil' }, 'nil');
      const target = related.get(`${relationship.destination}:${key}`) ?? [...related.values()].find((r) => r.key === key && isKindOf(r.entity, relationship.destination));
      const entityName = target?.entity ?? relationship.destination;
      return h('a', {
        href: `?entity=${encodeURIComponent(entityName)}&object=${key}`, testid: `to-one-${relationship.name}-${row.key}`,
        onclick: link({ entity: entityName, object: { entity: entityName, key }, of: null, predicate: '', sort: [] }),
      }, labelOf(target, entityName, key));
    }
    const count = counts.get(`${relationship.name}:${row.key}`);
    if (count === undefined) return h('span', { class: 'nil' }, '—');
    return h('a', {
      href: `?entity=${encodeURIComponent(relationship.destination)}&of=${encodeURIComponent(`${row.entity}:${row.key}:${relationship.name}`)}`,
      testid: `to-many-${relationship.name}-${row.key}`,
      onclick: link({ view: 'objects', entity: relationship.destination, object: null, predicate: '', sort: [], of: { entity: row.entity, key: row.key, relationship: relationship.name } }),
    }, `${count} ${count === 1 ? 'object' : 'objects'}`);
  }

  function isKindOf(name, ancestor) {
    for (let entity = entityNamed(name); entity; entity = entity.superentity && entityNamed(entity.superentity)) {
      if (entity.name === ancestor) return true;
    }
    return false;
  }

  /** An object's label: its first string attribute's value, else its entity and key. */
  function labelOf(row, entityName, key) {
    const entity = entityNamed(row?.entity ?? entityName);
    const attribute = entity?.attributes.find((a) => a.type === 'string' && typeof row?.values?.[a.name] === 'string' && row.values[a.name] !== '');
    return attribute ? `${row.values[attribute.name]} (${entityName} ${key})` : `${entityName} ${key}`;
  }

  /** First, Previous, the page's number, Next, Last and a page to go to; `turn(page)` shows a page (0 first). */
  function drawPager(pager, total, shownCount, turn) {
    clear(pager);
    if (!turn) return;
    const pages = Math.max(1, Math.ceil(total / state.size));
    const button = (testid, text, page, disabled) => h('button', { type: 'button', testid, disabled, onclick: () => turn(page) }, text);
    const jump = h('input', {
      type: 'number', class: 'page-jump', testid: 'page-jump-input', min: 1, max: pages, value: state.page + 1, 'aria-label': 'page number',
    });
    const form = h('form', { class: 'page-form', novalidate: true }, h('label', {}, 'Go to page ', jump), h('button', { type: 'submit', testid: 'page-jump' }, 'Go'));
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      const wanted = Math.round(Number(jump.value));
      if (Number.isFinite(wanted) && jump.value.trim() !== '') turn(Math.min(pages, Math.max(1, wanted)) - 1);
    });
    const first = state.page * state.size;
    append(pager, [
      button('page-first', '« First', 0, state.page === 0),
      button('page-prev', '← Previous', state.page - 1, state.page === 0),
      h('span', { class: 'page-number', testid: 'page-number' }, `Page ${state.page + 1} of ${pages}`,
        shownCount ? ` (objects ${first + 1}–${first + shownCount})` : ''),
      button('page-next', 'Next →', state.page + 1, state.page + 1 >= pages || state.cursors[state.page + 1] === null),
      button('page-last', 'Last »', pages - 1, state.page + 1 >= pages),
      form]);
  }

  function disablePager(pager) {
    for (const control of pager.querySelectorAll('button, input')) control.disabled = true;
  }

  /** The table with no rows, when the predicate's are not known (an invalid predicate, a failed fetch). */
  function emptyTable(table, pager, wrap, facets) {
    clear(pager);
    clear(table);
    wrap.classList.add('stale');
    table.append(h('tbody', {}, h('tr', {}, h('td', { class: 'none', testid: 'table-stale' }, 'No objects shown: the predicate has no answer.'))));
    facets.number = (facets.number ?? 0) + 1;
    clear(facets);
    facets.hidden = true;
  }

  // ---- Columns and facets -----------------------------------------------------

  /** The Columns control: a checkbox for each attribute and relationship; the choice is kept in the URL. */
  function columnsControl(entity, changed) {
    const names = [...entity.attributes.map((a) => a.name), ...entity.relationships.map((r) => r.name)];
    const boxes = names.map((name) => h('input', {
      type: 'checkbox', value: name, testid: `column-choice-${name}`, checked: !state.columns || state.columns.includes(name),
    }));
    const chosen = () => {
      const picked = boxes.filter((box) => box.checked).map((box) => box.value);
      state.columns = picked.length === names.length ? null : picked;
      writeURL(false);
      changed();
    };
    for (const box of boxes) box.addEventListener('change', chosen);
    const all = h('button', { type: 'button', testid: 'columns-all', onclick: () => { for (const box of boxes) box.checked = true; chosen(); } }, 'All');
    return h('details', { class: 'columns', testid: 'columns' },
      h('summary', { testid: 'columns-button' }, 'Columns'),
      h('div', { class: 'column-list', testid: 'column-list' },
        names.map((name, index) => h('label', {}, boxes[index], ' ', name)), h('div', { class: 'column-actions' }, all)));
  }

  const keyPathPattern = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

  /** The key paths a facet may count: the attributes, and those of the to-one relationships' destinations. */
  function facetPaths(entity) {
    const countable = (a) => !['binary', 'transformable', 'undefined', 'objectID'].includes(a.type);
    const paths = entity.attributes.filter(countable).map((a) => a.name);
    for (const relationship of entity.relationships.filter((r) => !r.toMany)) {
      for (const attribute of entityNamed(relationship.destination)?.attributes.filter(countable) ?? []) {
        paths.push(`${relationship.name}.${attribute.name}`);
      }
    }
    return paths;
  }

  /** The Facets control: the key path whose values are counted; kept in the URL. */
  function facetControl(entity, changed) {
    const paths = facetPaths(entity);
    if (state.facet && !paths.includes(state.facet)) paths.unshift(state.facet);
    const select = h('select', { testid: 'facet-select', 'aria-label': 'facet' },
      h('option', { value: '' }, '(none)'), paths.map((path) => h('option', { value: path, selected: path === state.facet }, path)));
    select.addEventListener('change', () => {
      state.facet = select.value;
      writeURL(false);
      changed();
    });
    return h('label', { class: 'facet-choice' }, 'Facets ', select);
  }

  /**
   * The counts of the facet's values under the predicate (`scoped`): the ten most frequent, then nil's. A
   * click on one joins `key == value` to the predicate (`addTerm`). A dictionary fetch grouped by the key
   * path counts each value's objects (`count:(SELF)`, which counts nil's too), largest first; nil's count
   * is a count fetch of its own, since nil may not be among the ten.
   */
  async function showFacets(entity, output, scoped, addTerm) {
    const number = (output.number = (output.number ?? 0) + 1);
    const key = state.facet;
    if (!key) {
      clear(output);
      output.hidden = true;
      return;
    }
    output.hidden = false;
    output.classList.add('loading');
    const head = h('div', { class: 'panel-head' }, h('h3', {}, `Facet: ${key}`),
      h('button', { type: 'button', class: 'close', testid: 'facet-close', onclick: () => {
        state.facet = '';
        writeURL(false);
        const select = document.querySelector('[data-testid="facet-select"]');
        if (select) select.value = '';
        showFacets(entity, output, scoped, addTerm);
      } }, 'Close'));
    try {
      if (!keyPathPattern.test(key)) throw new Error(`'${key}' is not a key path`);
      const { predicate, arguments: args } = scoped;
      const [grouped, nils] = await Promise.all([
        api('/v1/fetch', {
          entity: entity.name, predicate, arguments: args, result: 'dictionaries', groupBy: [key],
          select: [{ name: 'value', expression: key }, { name: 'count', expression: 'count:(SELF)' }],
          sort: [{ keyPath: 'count', ascending: false }, { keyPath: 'value' }], limit: 11,
        }),
        api('/v1/fetch', { entity: entity.name, predicate: predicate ? `(${predicate}) AND ${key} == nil` : `${key} == nil`, arguments: args, result: 'count' }),
      ]);
      if (number !== output.number) return;
      const items = (grouped.dictionaries ?? []).filter((row) => row.value !== null && row.value !== undefined).slice(0, 10)
        .map((row) => ({ value: row.value, count: Number(plainNumber(row.count)) }));
      if (nils.count > 0) items.push({ value: null, count: nils.count });
      const list = h('ul', { class: 'facet-values', testid: 'facet-values' }, items.map((item) => {
        const label = item.value === null ? 'nil' : (plain(item.value) === '' ? '""' : plain(item.value));
        const term = facetTerm(key, item.value);
        const content = [h('span', { class: `facet-label${item.value === null ? ' nil' : ''}` }, label), h('span', { class: 'facet-count' }, String(item.count))];
        return h('li', {}, term
          ? h('button', { type: 'button', class: 'facet-value', testid: 'facet-value', 'data-value': label, 'data-count': item.count, title: `add AND ${term}`, onclick: () => addTerm(term) }, content)
          : h('span', { class: 'facet-value', testid: 'facet-value', 'data-value': label, 'data-count': item.count }, content));
      }));
      append(clear(output), [head, items.length ? list : h('p', { class: 'note' }, 'No objects.')]);
    } catch (error) {
      if (number !== output.number) return;
      append(clear(output), [head, failureBox(error)]);
    } finally {
      if (number === output.number) output.classList.remove('loading');
    }
  }

  /** `key == value` in the format language, the value written as its literal; null for a value with none. */
  function facetTerm(key, value) {
    const literal = literalOf(value);
    return literal === null ? null : `${key} == ${literal}`;
  }

  function literalOf(value) {
    if (value === null || value === undefined) return 'nil';
    if (typeof value === 'string') return quoted(value);
    if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
    if (typeof value === 'number') return Number.isFinite(value) ? String(value) : null;
    if (typeof value === 'bigint') return String(value);
    switch (tagOf(value)) {
      case 'double': return typeof value.double === 'number' && Number.isFinite(value.double) ? String(value.double) : null;
      case 'date': {
        // The date's exact seconds (a number's text reads back as the same double).
        const seconds = typeof value.date === 'number' ? value.date : dateSeconds(value.date);
        return Number.isFinite(seconds) ? `CAST(${seconds}, "NSDate")` : null;
      }
      case 'uuid': return `CAST(${quoted(value.uuid)}, "NSUUID")`;
      default: return null;
    }
  }

  /** A string literal in double quotes with the escapes the predicate lexer reads (as PredicateValue.quoted). */
  function quoted(text) {
    let result = '"';
    for (const character of text) {
      const code = character.codePointAt(0);
      if (character === '"') result += '\\"';
      else if (character === '\\') result += '\\\\';
      else if (character === '\n') result += '\\n';
      else if (character === '\t') result += '\\t';
      else if (character === '\r') result += '\\r';
      else if (code < 0x20 || code === 0x7f) result += `\\u${code.toString(16).padStart(4, '0')}`;
      else result += character;
    }
    return `${result}"`;
  }

  function report(error) {
    status(error.message, true);
  }

  // ---- Explain ------------------------------------------------------------

  /** Empties a panel; it no longer follows the predicate. */
  function closePanel(panel) {
    panel.follow = null;
    clear(panel);
  }

  async function showExplain(entity, panel) {
    const number = (panel.number = (panel.number ?? 0) + 1);
    panel.follow = () => showExplain(entity, panel);
    const { predicate, arguments: args } = scope(entity);
    try {
      const answer = await api('/v1/explain', { entity: entity.name, predicate, arguments: args, sort: state.sort });
      // A later predicate's explanation was asked for meanwhile: this one is stale.
      if (number !== panel.number) return;
      clear(panel);
      const section = (title, testid, content) => h('section', {}, h('h3', {}, title), h('pre', { testid }, content));
      append(panel, h('div', { class: 'explain', testid: 'explain' },
        h('div', { class: 'panel-head' }, h('h2', {}, `How this fetch runs${answer.database && answer.database !== 'none' ? ` on ${answer.database}` : ''}`),
          h('button', { type: 'button', class: 'close', testid: 'explain-close', onclick: () => closePanel(panel) }, 'Close')),
        h('p', { class: 'note', testid: 'explain-predicate' }, 'For ', h('code', {}, predicate ?? 'TRUEPREDICATE')),
        answer.sql !== undefined ? section('SQL', 'explain-sql', answer.sql) : section('SQL', 'explain-sql', '(this store runs no SQL)'),
        section('Bindings', 'explain-bindings', answer.bindings.length ? answer.bindings.join('\n') : '(none)'),
        section('The database\'s plan', 'explain-plan', answer.databasePlan.length ? answer.databasePlan.join('\n') : '(none)'),
        section('In memory', 'explain-memory', answer.memory.length ? answer.memory.join('\n') : 'nothing: SQL evaluates the whole predicate'),
        answer.bound ? section('Bound predicate', 'explain-bound', answer.bound) : null));
    } catch (error) {
      if (number !== panel.number) return;
      clear(panel);
      append(panel, failureBox(error));
    }
  }

  // ---- Aggregates ---------------------------------------------------------

  function showGroups(entity, panel) {
    panel.number = (panel.number ?? 0) + 1;
    clear(panel);
    const numeric = entity.attributes.filter((a) => /^(integer|double|float|decimal)/.test(a.type) || a.type === 'date');
    const by = h('input', { type: 'text', testid: 'group-by-input', value: state.group.by, placeholder: 'a key path (department.name)', spellcheck: 'false', 'aria-label': 'group by' });
    const fn = h('select', { testid: 'aggregate-function', 'aria-label': 'aggregate' },
      ['count', 'sum', 'average', 'min', 'max'].map((name) => h('option', { value: name, selected: name === state.group.fn }, name)));
    const of = h('select', { testid: 'aggregate-attribute', 'aria-label': 'of' },
      numeric.map((a) => h('option', { value: a.name, selected: a.name === state.group.attribute }, a.name)));
    const output = h('div', { class: 'groups' });
    const run = async () => {
      state.group = { by: by.value.trim(), fn: fn.value, attribute: fn.value === 'count' ? '' : of.value };
      writeURL(false);
      clear(output);
      if (!state.group.by) return;
      const { predicate, arguments: args } = scope(entity);
      const expression = state.group.fn === 'count' ? `count:(${state.group.by})` : `${state.group.fn}:(${state.group.attribute})`;
      try {
        const answer = await api('/v1/fetch', {
          entity: entity.name, predicate, arguments: args, result: 'dictionaries', groupBy: [state.group.by],
          select: [{ name: 'group', expression: state.group.by }, { name: 'value', expression }], sort: [{ keyPath: 'group' }], limit: 10000,
        });
        drawGroups(output, answer.dictionaries ?? [], `${state.group.fn}${state.group.fn === 'count' ? '' : ` of ${state.group.attribute}`}`);
      } catch (error) {
        append(output, failureBox(error));
      }
    };
    const form = h('form', { class: 'group-form' },
      h('label', {}, 'Group by ', by), h('label', {}, ' ', fn), h('label', { class: 'of' }, ' of ', of),
      h('button', { type: 'submit', testid: 'group-run' }, 'Show'));
    const toggle = () => { form.querySelector('.of').hidden = fn.value === 'count'; };
    fn.addEventListener('change', toggle);
    toggle();
    form.addEventListener('submit', (event) => { event.preventDefault(); run(); });
    append(panel, h('div', { class: 'aggregates', testid: 'aggregates' },
      h('div', { class: 'panel-head' }, h('h2', {}, 'Groups'), h('button', { type: 'button', class: 'close', onclick: () => { state.group.by = ''; writeURL(false); closePanel(panel); } }, 'Close')),
      form, output));
    panel.follow = run;
    if (state.group.by) run();
  }

  function drawGroups(output, rows, title) {
    const table = h('table', { class: 'results', testid: 'group-table' },
      h('thead', {}, h('tr', {}, h('th', {}, 'group'), h('th', {}, title))),
      h('tbody', {}, rows.map((row) => h('tr', {}, h('td', {}, shown(row.group ?? null)), h('td', {}, shown(row.value ?? null))))));
    const numbers = rows.map((row) => Number(plainNumber(row.value)));
    const largest = Math.max(1e-12, ...numbers.map((n) => (Number.isFinite(n) ? Math.abs(n) : 0)));
    const barHeight = 22;
    const labelWidth = 180;
    const width = 720;
    const height = Math.max(1, rows.length) * barHeight + 30;
    const chart = s('svg', { class: 'chart', testid: 'chart', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': `bar chart: ${title}` },
      s('title', {}, `${title} by group`),
      rows.map((row, index) => {
        const value = Number.isFinite(numbers[index]) ? numbers[index] : 0;
        const length = (Math.abs(value) / largest) * (width - labelWidth - 90);
        const y = index * barHeight + 4;
        const label = plain(row.group ?? null) || (row.group === null || row.group === undefined ? 'nil' : '""');
        return s('g', { class: 'bar', testid: 'chart-bar' },
          s('text', { x: labelWidth - 8, y: y + 14, 'text-anchor': 'end' }, label.length > 28 ? `${label.slice(0, 27)}…` : label),
          s('rect', { x: labelWidth, y, width: Math.max(1, length), height: barHeight - 6, rx: 2 }),
          s('text', { x: labelWidth + Math.max(1, length) + 6, y: y + 14, class: 'value' }, plain(row.value ?? null)));
      }));
    append(clear(output), [chart, table]);
  }

  function plainNumber(value) {
    if (typeof value === 'number') return value;
    if (typeof value === 'bigint') return Number(value);
    if (tagOf(value) === 'double') return value.double;
    if (tagOf(value) === 'date') return typeof value.date === 'number' ? value.date : dateSeconds(value.date);
    return Number.NaN;
  }

  // ---- Export ---------------------------------------------------------------

  async function exportView(entity, format) {
    const { predicate, arguments: args } = scope(entity);
    const rows = [];
    let after;
    status('exporting…');
    try {
      do {
        const answer = await api('/v1/fetch', { entity: entity.name, predicate, arguments: args, sort: state.sort, limit: 1000, after });
        rows.push(...(answer.objects ?? []));
        after = answer.next;
      } while (after && rows.length < exportLimit);
    } catch (error) {
      status(error.message, true);
      return;
    }
    const name = `${entity.name}.${format === 'csv' ? 'csv' : 'jsonl'}`;
    if (format === 'jsonl') {
      // As `sift query --format jsonl` writes objects: dates in ISO 8601, numbers as numbers, to-one keys.
      const lines = rows.map((row) => {
        const object = { entity: row.entity, id: row.key };
        for (const attribute of entity.attributes) object[attribute.name] = exported(row.values[attribute.name] ?? null);
        for (const relationship of entity.relationships.filter((r) => !r.toMany)) object[relationship.name] = row.toOne?.[relationship.name] ?? null;
        return jsonText(object);
      });
      download(`${lines.join('\n')}\n`, name, 'application/jsonl');
    } else {
      const columns = entity.attributes.map((a) => a.name);
      const toOne = entity.relationships.filter((r) => !r.toMany).map((r) => r.name);
      const cell = (text) => {
        const safe = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text; // not a formula in a spreadsheet
        return /[",\n\r]/.test(safe) ? `"${safe.replaceAll('"', '""')}"` : safe;
      };
      const lines = [['entity', 'id', ...columns, ...toOne].map(cell).join(',')];
      for (const row of rows) {
        const text = (value) => (value === null ? '' : typeof value === 'object' ? jsonText(value) : String(value));
        lines.push([row.entity, String(row.key), ...columns.map((c) => cell(text(exported(row.values[c] ?? null)))),
          ...toOne.map((r) => String(row.toOne?.[r] ?? ''))].join(','));
      }
      download(`${lines.join('\r\n')}\r\n`, name, 'text/csv');
    }
    status(`exported ${rows.length} objects${after ? ` (the first ${exportLimit})` : ''}`);
  }

  /** A value as an export writes it in JSON (an attribute's plain form: ISO 8601 for a date, Base64 for bytes). */
  function exported(value) {
    switch (tagOf(value)) {
      case 'date': return isoText(value.date);
      case 'double': return typeof value.double === 'number' ? value.double : String(value.double);
      case 'uuid': return value.uuid;
      case 'data': return value.data;
      case 'object': return value.object.id;
      case 'dictionary': return value.dictionary;
      default: return value;
    }
  }

  // ---- One object ---------------------------------------------------------

  async function renderObject(entity, key) {
    const box = h('div', { class: 'object', testid: 'object-view' });
    append(frame.main, box);
    let row;
    try {
      row = (await api('/v1/objects', { entity: entity.name, keys: [key] })).objects[0];
    } catch (error) {
      append(box, failureBox(error));
      return;
    }
    if (!row) {
      append(box, h('h1', {}, `${entity.name} ${key}`), h('p', { testid: 'not-found' }, 'The store holds no such object (deleted?).'));
      return;
    }
    drawObject(box, entityNamed(row.entity) ?? entity, row);
  }

  function drawObject(box, entity, row, notice) {
    clear(box);
    const inputs = new Map();
    const attributes = entity.attributes;
    const table = h('table', { class: 'properties', testid: 'object-properties' });
    for (const attribute of attributes) {
      const value = row.values[attribute.name] ?? null;
      let cell = shown(value, attribute, `${row.entity}-${row.key}-${attribute.name}`);
      if (writable && editable(attribute)) {
        const field = editor(attribute, value);
        inputs.set(attribute.name, field);
        cell = field.element;
      }
      table.append(h('tr', { testid: `property-${attribute.name}` }, h('th', { title: attribute.type }, attribute.name), h('td', {}, cell)));
    }
    const relationships = h('table', { class: 'properties', testid: 'object-relationships' });
    for (const relationship of entity.relationships) {
      const cell = h('td', {});
      if (!relationship.toMany) {
        const target = row.toOne?.[relationship.name];
        append(cell, target === undefined ? h('span', { class: 'nil' }, 'nil')
          : h('a', { href: '#', testid: `to-one-${relationship.name}`, onclick: link({ entity: relationship.destination, object: { entity: relationship.destination, key: target } }) }, `${relationship.destination} ${target}`));
      } else {
        const anchor = h('a', {
          href: '#', testid: `to-many-${relationship.name}`,
          onclick: link({ view: 'objects', entity: relationship.destination, object: null, predicate: '', sort: [], of: { entity: row.entity, key: row.key, relationship: relationship.name } }),
        }, '…');
        api('/v1/destinations', { entity: row.entity, relationship: relationship.name, owners: [row.key] })
          .then((answer) => { const n = answer.links[0]?.members.length ?? 0; anchor.textContent = `${n} ${relationship.destination} ${n === 1 ? 'object' : 'objects'}`; })
          .catch(() => { anchor.textContent = relationship.destination; });
        append(cell, anchor);
      }
      relationships.append(h('tr', {}, h('th', { title: `${relationship.toMany ? 'to-many' : 'to-one'} ${relationship.destination}` }, relationship.name), cell));
    }
    const message = h('div', { class: 'message', testid: 'save-message', role: 'status' }, notice ?? '');
    const conflict = h('div', { class: 'conflict-box' });
    const actions = writable ? h('div', { class: 'actions' },
      h('button', { type: 'button', testid: 'save-object', onclick: () => saveObject(box, entity, row, inputs, message, conflict) }, 'Save'),
      deleteButton(entity, row, message)) : null;
    append(box, [
      h('h1', {}, `${row.entity} ${row.key}`, h('span', { class: 'version', testid: 'object-version' }, ` version ${row.version}`)),
      h('p', {}, h('a', { href: `?entity=${encodeURIComponent(entity.name)}`, onclick: link({ entity: entity.name, object: null }) }, `All ${entity.name} objects`)),
      h('h2', {}, 'Attributes'), table, h('h2', {}, 'Relationships'), relationships, actions, message, conflict]);
  }

  function editable(attribute) {
    return ['string', 'boolean', 'date', 'double', 'float', 'decimal', 'integer16', 'integer32', 'integer64', 'uuid', 'uri'].includes(attribute.type);
  }

  /** An input for an attribute's value, with a nil box for optional ones. */
  function editor(attribute, value, isNew = false) {
    const input = attribute.type === 'boolean'
      ? h('select', { testid: `edit-${attribute.name}` }, h('option', { value: 'true', selected: value === true }, 'true'), h('option', { value: 'false', selected: value === false }, 'false'))
      : h('input', { type: 'text', testid: `edit-${attribute.name}`, value: plain(value), spellcheck: 'false' });
    // A new object's required attribute starts as an empty value, not nil; typing a value clears nil.
    const nil = h('input', { type: 'checkbox', testid: `nil-${attribute.name}`, checked: value === null && (!isNew || attribute.optional) });
    // Text left as it was shown is the value as it was read, in the form it came in (exact, unchanged).
    const shownText = plain(value);
    input.addEventListener('input', () => { nil.checked = false; });
    input.addEventListener('change', () => { nil.checked = false; });
    const element = h('span', { class: 'editor' }, input, h('label', { class: 'nil-box' }, nil, ' nil'));
    return {
      element,
      value() {
        if (nil.checked) return null;
        const text = input.value;
        if (attribute.type !== 'boolean' && value !== null && text === shownText) return value;
        // In the plain forms the API reads an attribute's value in (its type in the model says what it is).
        switch (attribute.type) {
          case 'boolean': return text === 'true';
          case 'integer16': case 'integer32': case 'integer64': {
            if (!/^-?\d+$/.test(text.trim())) throw new Error(`${attribute.name} takes a whole number, not '${text}'`);
            const number = Number(text);
            return Number.isSafeInteger(number) || !exactIntegers ? number : BigInt(text.trim());
          }
          case 'double': case 'float': case 'decimal': {
            const number = Number(text);
            if (text.trim() === '' || !Number.isFinite(number)) throw new Error(`${attribute.name} takes a number, not '${text}'`);
            return number;
          }
          case 'date': {
            // ISO 8601 with a zone goes as it was typed (the server reads its digits exactly); other text as the browser reads it.
            const iso = text.trim().replace(' ', 'T');
            if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$/.test(iso) && !Number.isNaN(dateSeconds(iso))) return iso;
            const parsed = Date.parse(iso);
            if (Number.isNaN(parsed)) throw new Error(`${attribute.name} takes a date (2024-05-01T12:00:00Z), not '${text}'`);
            return new Date(parsed).toISOString();
          }
          default: return text;
        }
      },
    };
  }

  function deleteButton(entity, row, message) {
    const button = h('button', { type: 'button', class: 'danger', testid: 'delete-object' }, 'Delete');
    button.addEventListener('click', async () => {
      if (button.dataset.armed !== 'yes') {
        button.dataset.armed = 'yes';
        button.textContent = 'Delete: click again to confirm';
        return;
      }
      try {
        await api('/v1/save', { origin: pageOrigin, deletes: [{ entity: row.entity, key: row.key, expectedVersion: row.version }] });
        go({ entity: entity.name, object: null });
        status(`deleted ${row.entity} ${row.key}`);
      } catch (error) {
        message.textContent = error.status === 409 ? 'Not deleted: the object changed since it was read. Reload to see it.' : error.message;
      }
    });
    return button;
  }

  function changedValues(row, inputs) {
    const values = { ...row.values };
    const changed = [];
    for (const [name, field] of inputs) {
      const value = field.value();
      if (jsonText(value ?? null) !== jsonText(row.values[name] ?? null)) {
        changed.push(name);
        if (value === null) delete values[name]; else values[name] = value;
      }
    }
    return { values, changed };
  }

  const targets = (toOne) => Object.fromEntries(Object.entries(toOne ?? {}).map(([name, key]) => [name, { key }]));

  async function saveObject(box, entity, row, inputs, message, conflictBox) {
    clear(conflictBox);
    let edit;
    try { edit = changedValues(row, inputs); } catch (error) { message.textContent = error.message; return; }
    if (!edit.changed.length) { message.textContent = 'Nothing changed.'; return; }
    const write = async (values, version) => api('/v1/save', {
      origin: pageOrigin, updates: [{ entity: row.entity, key: row.key, expectedVersion: version, values, toOne: targets(row.toOne) }],
    });
    try {
      await write(edit.values, row.version);
      const fresh = (await api('/v1/objects', { entity: row.entity, keys: [row.key] })).objects[0];
      drawObject(box, entity, fresh, `Saved ${edit.changed.join(', ')}.`);
    } catch (error) {
      if (error.status !== 409) { message.textContent = error.message; return; }
      const current = error.body?.conflicts?.[0]?.current;
      message.textContent = '';
      drawConflict(conflictBox, entity, row, current, edit, async (choice) => {
        try {
          if (choice === 'rollback' || !current) {
            drawObject(box, entity, current ?? row, current ? 'Kept the stored values; your changes were dropped.' : 'The object was deleted meanwhile.');
            return;
          }
          // Mine wins for what I changed (the rest as stored), or mine everywhere.
          const values = choice === 'overwrite' ? edit.values : { ...current.values };
          if (choice !== 'overwrite') for (const name of edit.changed) { const v = edit.values[name]; if (v === undefined) delete values[name]; else values[name] = v; }
          await write(values, current.version);
          const fresh = (await api('/v1/objects', { entity: row.entity, keys: [row.key] })).objects[0];
          drawObject(box, entity, fresh, `Saved with ${choice === 'overwrite' ? 'your values everywhere' : 'your changes over the stored values'}.`);
        } catch (again) {
          conflictBox.append(failureBox(again));
        }
      });
    }
  }

  function drawConflict(box, entity, mine, current, edit, resolve) {
    const names = new Set([...edit.changed, ...Object.keys(current?.values ?? {}).filter((n) => jsonText(current.values[n]) !== jsonText(mine.values[n]))]);
    const table = h('table', { class: 'results' },
      h('thead', {}, h('tr', {}, h('th', {}, 'attribute'), h('th', {}, 'yours'), h('th', {}, 'stored now'))),
      h('tbody', {}, [...names].map((name) => {
        const attribute = entity.attributes.find((a) => a.name === name);
        return h('tr', { testid: `conflict-${name}` }, h('th', {}, name), h('td', { class: 'mine' }, shown(edit.values[name] ?? null, attribute)), h('td', { class: 'theirs' }, shown(current?.values?.[name] ?? null, attribute)));
      })));
    append(clear(box), h('div', { class: 'conflict', testid: 'conflict', role: 'alert' },
      h('h2', {}, 'Conflict: this object was saved by someone else since you read it'),
      current ? h('p', {}, `You read version ${mine.version}; the store holds version ${current.version}. Nothing was written. Choose a merge policy:`)
        : h('p', {}, 'The object was deleted since you read it. Nothing was written.'),
      current ? table : null,
      h('div', { class: 'actions' },
        current ? h('button', { type: 'button', testid: 'policy-objectTrump', onclick: () => resolve('objectTrump'), title: 'mergeByPropertyObjectTrump' }, 'Your changes win (merge by property)') : null,
        current ? h('button', { type: 'button', testid: 'policy-overwrite', onclick: () => resolve('overwrite'), title: 'overwrite' }, 'All your values win (overwrite)') : null,
        h('button', { type: 'button', testid: 'policy-rollback', onclick: () => resolve('rollback'), title: 'rollback' }, 'Keep the stored values (rollback)'))));
  }

  function renderNewObject(entity) {
    clear(frame.main);
    const inputs = new Map();
    const table = h('table', { class: 'properties' });
    for (const attribute of entity.attributes.filter(editable)) {
      const field = editor(attribute, attribute.default ?? null, true);
      inputs.set(attribute.name, field);
      table.append(h('tr', {}, h('th', { title: attribute.type }, attribute.name), h('td', {}, field.element)));
    }
    const message = h('div', { class: 'message', testid: 'save-message', role: 'status' });
    const save = h('button', { type: 'button', testid: 'insert-save' }, 'Insert');
    save.addEventListener('click', async () => {
      const values = {};
      try {
        for (const [name, field] of inputs) { const v = field.value(); if (v !== null) values[name] = v; }
        const answer = await api('/v1/save', { origin: pageOrigin, inserts: [{ temporaryID: -1, entity: entity.name, values }] });
        const key = answer.keys.find((k) => k.temporaryID === -1)?.key;
        go({ entity: entity.name, object: { entity: entity.name, key } });
        status(`inserted ${entity.name} ${key}`);
      } catch (error) {
        message.textContent = error.message;
      }
    });
    append(frame.main, h('div', { class: 'object', testid: 'new-object' }, h('h1', {}, `New ${entity.name}`), table, h('div', { class: 'actions' }, save), message));
  }

  // ---- The model as a diagram -----------------------------------------------

  /** Where the line from a box's center towards (x, y) leaves the box. */
  function border(box, x, y) {
    const cx = box.x + box.width / 2;
    const cy = box.y + box.height / 2;
    const dx = x - cx;
    const dy = y - cy;
    if (!dx && !dy) return [cx, cy];
    const scale = Math.min(dx ? (box.width / 2) / Math.abs(dx) : Infinity, dy ? (box.height / 2) / Math.abs(dy) : Infinity);
    return [cx + dx * scale, cy + dy * scale];
  }

  /** The width of a link label's text, as the diagram's 11px font draws it. */
  function linkLabelWidth(text) {
    const context = (linkLabelWidth.canvas ??= document.createElement('canvas')).getContext('2d');
    context.font = `11px ${getComputedStyle(document.body).fontFamily}`;
    return Math.ceil(context.measureText(text).width) + 6;
  }

  /** Whether two rectangles ({x, y, width, height}) overlap. */
  function overlaps(a, b) {
    return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  }

  /**
   * Where a link label goes: the first of its candidate places (along its line, above or below it)
   * whose text crosses no entity's box and no label already placed; else the one that crosses least.
   */
  function placeLabel(text, candidates, boxes, placed) {
    const width = linkLabelWidth(text);
    const height = 14;
    let best = null;
    let bestCost = Infinity;
    for (const [cx, baseline] of candidates) {
      const rect = { x: cx - width / 2, y: baseline - 11, width, height };
      const cost = [...boxes, ...placed].reduce((sum, other) => sum + (overlaps(rect, other)
        ? (Math.min(rect.x + rect.width, other.x + other.width) - Math.max(rect.x, other.x))
          * (Math.min(rect.y + rect.height, other.y + other.height) - Math.max(rect.y, other.y)) : 0), 0);
      if (cost < bestCost) { best = rect; bestCost = cost; }
      if (cost === 0) break;
    }
    placed.push(best);
    return { x: best.x + best.width / 2, y: best.y + 11 };
  }

  function renderDiagram() {
    const entities = [...model.entities.values()];
    const columns = Math.max(1, Math.ceil(Math.sqrt(entities.length)));
    const boxWidth = 190;
    const lineHeight = 16;
    // Wide enough between columns for the longest link label (within reason).
    const labels = entities.flatMap((e) => (e.own.relationships ?? []).map((r) => `${r.name}/${r.inverse ?? ''} ∗–∗`));
    const gapX = Math.min(260, Math.max(90, ...labels.map((text) => linkLabelWidth(text) + 24)));
    const gapY = 60;
    const heights = entities.map((e) => 28 + (e.own.attributes?.length ?? 0) * lineHeight + (e.own.relationships?.length ?? 0) * lineHeight + 8);
    const rows = Math.ceil(entities.length / columns);
    const rowHeights = Array.from({ length: rows }, (_, r) => Math.max(...heights.slice(r * columns, r * columns + columns)));
    const place = new Map();
    entities.forEach((entity, index) => {
      const column = index % columns;
      const row = Math.floor(index / columns);
      const y = 20 + rowHeights.slice(0, row).reduce((a, b) => a + b + gapY, 0);
      place.set(entity.name, { x: 20 + column * (boxWidth + gapX), y, width: boxWidth, height: heights[index] });
    });
    const width = 40 + columns * (boxWidth + gapX);
    const height = 40 + rowHeights.reduce((a, b) => a + b + gapY, 0);
    const lines = [];
    const drawn = new Set();
    const boxRects = [...place.values()].map((p) => ({ x: p.x - 2, y: p.y - 2, width: p.width + 4, height: p.height + 4 }));
    const placedLabels = [];
    for (const entity of entities) {
      for (const relationship of entity.own.relationships ?? []) {
        const pair = [entity.name, relationship.destination].sort().join('|') + [relationship.name, relationship.inverse ?? ''].sort().join('|');
        if (drawn.has(pair)) continue;
        drawn.add(pair);
        const a = place.get(entity.name);
        const b = place.get(relationship.destination);
        if (!a || !b) continue;
        const inverse = entityNamed(relationship.destination)?.relationships.find((r) => r.name === relationship.inverse);
        const ends = `${inverse ? (inverse.toMany ? '∗' : '1') : ''}–${relationship.toMany ? '∗' : '1'}`;
        const [x1, y1] = border(a, b.x + b.width / 2, b.y + b.height / 2);
        const [x2, y2] = border(b, a.x + a.width / 2, a.y + a.height / 2);
        if (a === b) {
          const text = `${relationship.name} ${ends}`;
          const width = linkLabelWidth(text);
          const at = placeLabel(text, [[a.x + a.width + 8 + width / 2, a.y + 64], [a.x + a.width + 8 + width / 2, a.y + 14],
            [a.x + a.width / 2, a.y - 6], [a.x + a.width / 2, a.y + a.height + 14]], boxRects, placedLabels);
          lines.push(s('path', { class: 'link', d: `M ${a.x + a.width} ${a.y + 20} c 40 0 40 30 0 30` }),
            s('text', { class: 'link-label', x: at.x, y: at.y, 'text-anchor': 'middle' }, text));
        } else {
          const text = `${relationship.name}${inverse ? `/${inverse.name}` : ''} ${ends}`;
          const along = [0.5, 0.35, 0.65, 0.2, 0.8].flatMap((t) => [[x1 + (x2 - x1) * t, y1 + (y2 - y1) * t - 4], [x1 + (x2 - x1) * t, y1 + (y2 - y1) * t + 14]]);
          const at = placeLabel(text, along, boxRects, placedLabels);
          lines.push(s('line', { class: 'link', x1, y1, x2, y2 }),
            s('text', { class: 'link-label', x: at.x, y: at.y, 'text-anchor': 'middle' }, text));
        }
      }
      if (entity.superentity && place.get(entity.superentity)) {
        const a = place.get(entity.name);
        const b = place.get(entity.superentity);
        lines.push(s('line', { class: 'inherits', x1: a.x + a.width / 2, y1: a.y, x2: b.x + b.width / 2, y2: b.y + b.height }));
      }
    }
    const boxes = entities.map((entity) => {
      const p = place.get(entity.name);
      const rowsText = [
        ...(entity.own.attributes ?? []).map((a) => `${a.name}: ${a.type}${a.optional ? '?' : ''}`),
        ...(entity.own.relationships ?? []).map((r) => `${r.name} → ${r.toMany ? `[${r.destination}]` : r.destination}`),
      ];
      const group = s('g', { class: `entity${entity.abstract ? ' abstract' : ''}`, testid: `diagram-${entity.name}`, tabindex: 0, role: 'link' },
        s('rect', { x: p.x, y: p.y, width: p.width, height: p.height, rx: 4 }),
        s('text', { class: 'title', x: p.x + 8, y: p.y + 18 }, entity.name + (entity.superentity ? ` : ${entity.superentity}` : '')),
        rowsText.map((text, i) => s('text', { x: p.x + 8, y: p.y + 38 + i * lineHeight }, text.length > 28 ? `${text.slice(0, 27)}…` : text)));
      group.addEventListener('click', () => go({ view: 'objects', entity: entity.name, object: null, predicate: '', sort: [], of: null }));
      return group;
    });
    append(frame.main, h('section', { class: 'diagram-wrap' }, h('h2', {}, 'Model'),
      s('svg', { class: 'diagram', testid: 'diagram', viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'aria-label': 'the model: entities and relationships' },
        s('title', {}, 'Entities and their relationships'), boxes, lines)));
  }

  // ---- History ------------------------------------------------------------

  async function renderHistory() {
    const box = h('section', { class: 'history', testid: 'history' }, h('h1', {}, 'History'));
    append(frame.main, box);
    try {
      const query = new URLSearchParams({ limit: '50' });
      if (state.historyBefore) query.set('before', String(state.historyBefore));
      const answer = await api(`/v1/history?${query}`);
      if (!answer.tracked) {
        append(box, h('p', { testid: 'history-untracked' }, 'This store keeps no persistent history.'));
        return;
      }
      const table = h('table', { class: 'results', testid: 'history-table' },
        h('thead', {}, h('tr', {}, ['transaction', 'time', 'author', 'context', 'process', 'changes'].map((t) => h('th', {}, t)))),
        h('tbody', {}, answer.transactions.map((t) => h('tr', { testid: `transaction-${t.number}` },
          h('td', {}, String(t.number)), h('td', {}, t.timestamp.replace('T', ' ')), h('td', {}, t.author ?? ''), h('td', {}, t.contextName ?? ''),
          h('td', {}, t.processID ?? ''),
          h('td', {}, h('ul', { class: 'changes' }, t.changes.map((c) => h('li', { class: c.type },
            `${c.type} `, h('a', { href: '#', onclick: link({ view: 'objects', entity: c.entity, object: { entity: c.entity, key: c.key } }) }, `${c.entity} ${c.key}`),
            c.properties?.length ? ` (${c.properties.join(', ')})` : ''))))))));
      append(box, table.tBodies[0].rows.length ? table : h('p', {}, 'No transactions.'));
      const pager = h('div', { class: 'pager' });
      if (state.historyBefore) pager.append(h('button', { type: 'button', onclick: () => { state.historyBefore = null; render(); } }, 'Newest'));
      if (answer.next) pager.append(h('button', { type: 'button', testid: 'history-older', onclick: () => { state.historyBefore = answer.next; render(); } }, 'Older →'));
      box.append(pager);
    } catch (error) {
      append(box, failureBox(error));
    }
  }

  // ---- Start ----------------------------------------------------------------

  async function start() {
    let store;
    try {
      store = await api('/v1/store');
    } catch (error) {
      document.body.append(h('div', { class: 'failure', role: 'alert' }, `The store could not be read: ${error.message}`));
      return;
    }
    readModel(store.model);
    buildFrame(store);
    renderEntities();
    readURL();
    render();
    window.addEventListener('popstate', () => { readURL(); render(); });
    document.body.dataset.ready = 'true';
    follow(store.token);
  }

  start();
})();
"""#
}
#endif
