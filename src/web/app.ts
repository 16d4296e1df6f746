// The `kvpack web` page: settings from the URL and the form, the served models (GGUF files and Hugging Face
// directories) or a picked local GGUF / folder, and the engine Worker's
// events drawn as streaming text with tokens/s, a bar of cache bytes per region against f16, and (compare
// mode) where f16 and the scheme first diverge. When a run ends the token ids go to #kvpack-tokens and the
// cache bytes to #kvpack-bytes, so a script (the browser tests) can read the result.
import { schemes } from '../cache/schemes.js';
import { ArgumentError, DefinitionError } from '../errors.js';
import { hasRelaxedSimd } from '../kernels/runtime/features.js';
import { isHfModelFile } from '../hf/model-files.js';
import type { ServedFile } from '../hf/web-files.js';
import type { CacheReadout, EngineEvent, EngineRequest, ModelRef } from './protocol.js';
import { readSettings, settingsQuery, type PageSettings } from './settings.js';

/** The select's value for "the file(s) or folder picked last". */
const PICKED = '\u0000picked';
const REGIONS = ['sinks', 'window', 'anchors', 'bulk', 'staging'] as const;

const $ = <T extends HTMLElement>(id: string): T => {
  const el = document.getElementById(id);
  if (!el) throw new DefinitionError(`page: no #${id}`);
  return el as T;
};
const form = $<HTMLFormElement>('settings');
const modelSel = $<HTMLSelectElement>('model');
const fileInput = $<HTMLInputElement>('file');
const folderInput = $<HTMLInputElement>('folder');
const schemeSel = $<HTMLSelectElement>('scheme');
const status = $('status');
const arms = $('arms');
const numbers = ['n', 'window', 'sinks', 'anchors', 'threads'] as const;

let engine: Worker | null = null;
let armEls: { root: HTMLElement; stats: HTMLElement; text: HTMLElement }[] = [];
let threadsNote = '';
/** What the last pick (file input or folder input) holds. */
let picked: ModelRef | null = null;
/** The served Hugging Face directories by name, with their files (from models.json). */
const servedDirs = new Map<string, ServedFile[]>();

function setStatus(text: string, state?: 'running' | 'done' | 'error'): void {
  status.textContent = text;
  if (state) document.body.dataset['state'] = state;
  if (state && state !== 'running') $<HTMLButtonElement>('stop').disabled = true;
}

function fillForm(s: PageSettings): void {
  for (const [name, sch] of schemes) schemeSel.add(new Option(`${name}: K ${sch.k}, V ${sch.v}`, name));
  schemeSel.value = s.scheme;
  $<HTMLTextAreaElement>('prompt').value = s.prompt;
  for (const k of numbers) $<HTMLInputElement>(k).value = String(s[k]);
  $<HTMLInputElement>('compare').checked = s.compare;
}

function formSettings(): PageSettings {
  const p = new URLSearchParams();
  p.set('model', modelSel.value === PICKED ? '' : modelSel.value);
  p.set('prompt', $<HTMLTextAreaElement>('prompt').value);
  p.set('scheme', schemeSel.value);
  for (const k of numbers) p.set(k, $<HTMLInputElement>(k).value.trim());
  if ($<HTMLInputElement>('compare').checked) p.set('compare', '1');
  const { settings, problems } = readSettings(p);
  if (problems.length) throw new ArgumentError(problems.join('; '));
  return settings;
}

type Listed = { kind: 'gguf'; name: string } | { kind: 'hf'; name: string; files: ServedFile[] };

/** The served models (GET models.json); a `model` parameter not among them is kept as a URL. */
async function listModels(wanted: string): Promise<void> {
  let listed: Listed[] = [];
  try {
    const r = await fetch('models.json');
    if (r.ok) listed = (await r.json()) as Listed[];
  } catch {
    // No listing (a static copy of the page): a picked file or folder, or a model URL, still works.
  }
  for (const m of listed) if (m.kind === 'hf') servedDirs.set(m.name, m.files);
  const names = listed.map((m) => m.name);
  // A file or folder picked while the listing loaded stays listed and chosen: the pick is the newer choice.
  const pick = pickedOption();
  const pickChosen = modelSel.value === PICKED;
  if (names.length) modelSel.replaceChildren(...listed.map((m) => new Option(m.kind === 'hf' ? `${m.name} (Hugging Face)` : m.name, m.name)));
  if (wanted && !names.includes(wanted)) modelSel.add(new Option(wanted, wanted));
  if (pick) modelSel.add(pick);
  if (pickChosen) modelSel.value = PICKED;
  else if (wanted) modelSel.value = wanted;
}

function modelRef(): ModelRef {
  if (modelSel.value === PICKED && picked) return picked;
  const v = modelSel.value;
  if (!v) throw new ArgumentError('choose a model (none is served: start `kvpack web --models DIR`) or pick a local GGUF or folder');
  const files = servedDirs.get(v);
  if (files) return { dir: `models/${encodeURIComponent(v)}/`, files, name: v };
  // A bare name is a served model; anything with a slash or scheme is a URL as given.
  return { url: /[/:]/.test(v) ? v : `models/${encodeURIComponent(v)}`, name: v };
}

/**
 * What a pick holds: one GGUF file, or a Hugging Face directory (a folder, or its files picked together).
 * The folder's name comes from the paths the browser gives its files.
 */
function pickedRef(list: FileList | null): ModelRef | null {
  const files = Array.from(list ?? []);
  if (files.length === 0) return null;
  const one = files[0]!;
  if (files.length === 1 && !one.webkitRelativePath && !isHfModelFile(one.name)) return { file: one, name: one.name };
  const paths = files.map((f) => f.webkitRelativePath || f.name);
  const folder = paths[0]!.includes('/') ? paths[0]!.split('/')[0]! : 'picked files';
  return { picked: files.map((file, i) => ({ path: paths[i]!, file })), name: folder };
}

/** The select's entry for the last pick (by value: a CSS selector cannot match PICKED's U+0000). */
function pickedOption(): HTMLOptionElement | undefined {
  return Array.from(modelSel.options).find((o) => o.value === PICKED);
}

function onPick(input: HTMLInputElement): void {
  picked = pickedRef(input.files);
  if (!picked) return;
  pickedOption()?.remove();
  modelSel.add(new Option('file' in picked ? `local file: ${picked.name}` : `local folder: ${picked.name}`, PICKED));
  modelSel.value = PICKED;
}

function send(req: EngineRequest): void {
  engine ??= startEngine();
  $<HTMLButtonElement>('stop').disabled = false;
  engine.postMessage(req);
}

function startEngine(): Worker {
  const w = new Worker(new URL('./engine-worker.js', import.meta.url), { type: 'module', name: 'kvpack-engine' });
  w.onmessage = (e: MessageEvent<EngineEvent>) => onEvent(e.data);
  w.onerror = (e) => setStatus(`Error: the engine failed to start (${e.message || 'worker error'})`, 'error');
  return w;
}

function run(): void {
  let s: PageSettings;
  let source: ModelRef;
  try {
    s = formSettings();
    source = modelRef();
  } catch (e) {
    return setStatus(`Error: ${(e as Error).message}`, 'error');
  }
  const query = settingsQuery(s);
  history.replaceState(null, '', `?${query}`);
  const link = $<HTMLAnchorElement>('permalink');
  link.href = `?${query}`;
  link.textContent = location.href;
  arms.replaceChildren();
  armEls = [];
  $('divergence').hidden = true;
  for (const id of ['kvpack-tokens', 'kvpack-bytes']) $(id).textContent = '';
  setStatus('starting...', 'running');
  const { model: _m, autorun: _a, ...rest } = s;
  send({ type: 'run', source, ...rest });
}

function onEvent(e: EngineEvent): void {
  switch (e.type) {
    case 'status':
      return setStatus(e.text);
    case 'threads': {
      threadsNote = `${e.threads} of ${e.wanted} wanted${e.note ? ` (${e.note})` : ''}`;
      return;
    }
    case 'loaded': {
      const i = e.info;
      return setStatus(
        `${i.name}: ${i.arch}, ${i.layers} layers, ${i.kvHeads} KV heads x ${i.headDim}, context ${i.nCtxTrain}, ${(i.weightBytes / 2 ** 20).toFixed(1)} MiB of weights, loaded in ${i.loadMs.toFixed(0)} ms`,
      );
    }
    case 'arm':
      return addArm(e.scheme, e.arm, e.promptTokens);
    case 'token': {
      const a = armEls[e.arm]!;
      const span = document.createElement('span');
      span.className = 'tok';
      span.textContent = e.text;
      span.dataset['id'] = String(e.id);
      a.text.append(span);
      a.stats.textContent = `${e.index + 1} tokens, ${e.tps.toFixed(1)} tok/s`;
      return drawCache(e);
    }
    case 'end': {
      const a = armEls[e.arm]!;
      a.stats.textContent = `${e.ids.length} tokens; decode ${e.decodeTps.toFixed(1)} tok/s, prefill ${e.prefillTps.toFixed(1)} tok/s; stop: ${e.stopReason}`;
      drawCache(e);
      // The last arm is the chosen scheme (compare mode runs f16 first).
      $('kvpack-tokens').textContent = e.ids.join(' ');
      const bytes = $('kvpack-bytes');
      bytes.textContent = String(e.bytes.total);
      Object.assign(bytes.dataset, { f16: String(e.f16Bytes), positions: String(e.positions) });
      return;
    }
    case 'done': {
      const t = $('kvpack-threads');
      t.textContent = `${threadsNote}; pool: ${e.pool.workers} workers, ${e.pool.calls} calls and ${e.pool.jobs} attention jobs handed to them`;
      Object.assign(t.dataset, { workers: String(e.pool.workers), calls: String(e.pool.calls), jobs: String(e.pool.jobs) });
      if (e.divergence !== null) showDivergence(e.divergence);
      return setStatus('Done.', 'done');
    }
    case 'check': {
      const failures = e.failures.length ? `: ${e.failures.slice(0, 3).join('; ')}` : '';
      document.body.dataset['check'] = `${e.passed} passed, ${e.failed} failed`;
      return setStatus(
        `Kernel check in this browser: ${e.passed} passed, ${e.failed} failed (${e.fallback} reference fallback)${failures}`,
        e.failed ? 'error' : 'done',
      );
    }
    case 'error':
      return setStatus(`Error: ${e.message}`, 'error');
  }
}

function addArm(scheme: string, arm: number, promptTokens: number): void {
  const root = document.createElement('article');
  root.className = 'arm';
  const h = document.createElement('h3');
  h.textContent = armEls.length === 0 && $<HTMLInputElement>('compare').checked ? `${scheme} (reference)` : scheme;
  const stats = document.createElement('p');
  stats.className = 'stats';
  stats.textContent = `prefill of ${promptTokens} prompt tokens...`;
  const text = document.createElement('p');
  text.className = 'text';
  text.setAttribute('aria-live', 'off');
  root.append(h, stats, text);
  arms.append(root);
  armEls[arm] = { root, stats, text };
}

function drawCache(r: CacheReadout): void {
  const scale = Math.max(r.f16Bytes, r.bytes.total);
  const bar = $('bar');
  bar.replaceChildren(
    ...REGIONS.filter((k) => r.bytes[k] > 0).map((k) => {
      const s = document.createElement('span');
      s.className = `r-${k}`;
      s.style.width = `${(100 * r.bytes[k]) / scale}%`;
      s.title = `${k}: ${r.bytes[k]} B`;
      return s;
    }),
  );
  // Overlays (exact window and sinks beside the bulk) can cost more than f16 at short contexts: then the
  // bar's full width is this cache and a line marks where f16 ends.
  if (r.bytes.total > r.f16Bytes) {
    const mark = document.createElement('i');
    mark.className = 'f16mark';
    mark.style.left = `${(100 * r.f16Bytes) / scale}%`;
    bar.append(mark);
  }
  $('barnote').textContent =
    r.bytes.total > r.f16Bytes ? 'Full width: this cache; the black line marks what f16 would take.' : 'Full width: the same positions in f16.';
  const pct = (100 * r.bytes.total) / r.f16Bytes;
  bar.setAttribute('aria-label', `cache ${r.bytes.total} bytes, ${pct.toFixed(1)}% of f16's ${r.f16Bytes}`);
  const rows = [...REGIONS.map((k) => [k, r.bytes[k]] as const), ['total', r.bytes.total] as const, ['f16 would take', r.f16Bytes] as const];
  $('regions')
    .querySelector('tbody')!
    .replaceChildren(
      ...rows.map(([k, v]) => {
        const tr = document.createElement('tr');
        const th = document.createElement('th');
        th.scope = 'row';
        if ((REGIONS as readonly string[]).includes(k)) {
          const sw = document.createElement('span');
          sw.className = `swatch r-${k}`;
          th.append(sw);
        }
        th.append(k);
        const td = document.createElement('td');
        td.textContent = v.toLocaleString('en-US');
        tr.append(th, td);
        return tr;
      }),
    );
  const bits = (8 * r.bytes.total) / r.values;
  $('bits').textContent = `${r.positions} positions: ${bits.toFixed(2)} effective bits per K/V value (f16: 16), ${pct.toFixed(1)}% of f16.`;
}

function showDivergence(at: number): void {
  const el = $('divergence');
  el.hidden = false;
  if (at < 0) {
    el.textContent = 'The scheme generated exactly the f16 tokens.';
    return;
  }
  for (const a of armEls) a.text.children[at]?.classList.add('diverge');
  const id = (arm: number) => (armEls[arm]!.text.children[at] as HTMLElement | undefined)?.dataset['id'] ?? 'none (stopped)';
  el.textContent = `First divergence at generated token ${at}: f16 chose ${id(0)}, the scheme ${id(1)}.`;
}

async function init(): Promise<void> {
  const { settings, problems } = readSettings(new URLSearchParams(location.search));
  fillForm(settings);
  const iso = $('isolation');
  // The engine worker picks its kernel build itself (src/kernels/runtime/relaxed.ts: relaxed only where its self-test passes).
  const simd = hasRelaxedSimd()
    ? ' Relaxed SIMD available: the engine runs its relaxed-SIMD kernels if their self-test passes.'
    : ' Relaxed SIMD absent: the kernels use baseline SIMD.';
  if (crossOriginIsolated) iso.textContent = `Cross-origin isolated: up to ${navigator.hardwareConcurrency} threads over one shared wasm memory.${simd}`;
  else {
    iso.textContent = `Not cross-origin isolated (no COOP/COEP headers): the engine runs on one thread.${simd}`;
    iso.classList.add('warn');
  }
  for (const input of [fileInput, folderInput]) input.addEventListener('change', () => onPick(input));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    run();
  });
  $('stop').addEventListener('click', () => {
    // Generation is one blocking loop in the Worker: stopping ends the Worker (the next run starts another).
    engine?.terminate();
    engine = null;
    $<HTMLButtonElement>('stop').disabled = true;
    setStatus('Stopped.', 'done');
  });
  $('check').addEventListener('click', () => {
    setStatus('starting the kernel check...', 'running');
    send({ type: 'check' });
  });
  await listModels(settings.model);
  if (problems.length) setStatus(`Ignored URL parameters: ${problems.join('; ')}`);
  if (settings.autorun) run();
}

void init();
