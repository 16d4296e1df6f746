// The page's settings as URL parameters (a link reproduces a run): model, prompt, n, scheme, window,
// sinks, anchors, threads, compare, autorun. Values out of bounds are reported, never silently clamped.
import type { CachePolicy } from '../cache/policy.js';
import { schemePolicy, schemes } from '../cache/schemes.js';

export interface PageSettings {
  /** A model listed by the server (its file name), or '' for none chosen yet. */
  model: string;
  prompt: string;
  /** Tokens to generate. */
  n: number;
  scheme: string;
  window: number;
  sinks: number;
  /** First generated positions kept exact (f16, every layer). */
  anchors: number;
  /** Threads including the engine's own; 0 = every core the browser reports. */
  threads: number;
  /** Run f16 and the scheme on the same greedy prompt and show where they first diverge. */
  compare: boolean;
  autorun: boolean;
}

export const DEFAULT_SETTINGS: Readonly<PageSettings> = {
  model: '',
  prompt: 'Once upon a time',
  n: 32,
  scheme: 'q2k',
  window: 32,
  sinks: 4,
  anchors: 0,
  threads: 0,
  compare: false,
  autorun: false,
};

/** Integer parameters and their bounds. */
const INTS = { n: [1, 4096], window: [0, 1 << 20], sinks: [0, 1 << 20], anchors: [0, 1 << 20], threads: [0, 256] } as const;
type IntKey = keyof typeof INTS;

/** Settings from URL parameters over the defaults, and one line per parameter that could not be used. */
export function readSettings(params: URLSearchParams): { settings: PageSettings; problems: string[] } {
  const s: PageSettings = { ...DEFAULT_SETTINGS };
  const problems: string[] = [];
  const model = params.get('model');
  if (model !== null) s.model = model;
  const prompt = params.get('prompt');
  if (prompt !== null) s.prompt = prompt;
  const scheme = params.get('scheme');
  if (scheme !== null) {
    if (schemes.has(scheme)) s.scheme = scheme;
    else problems.push(`scheme '${scheme}' is not one of ${[...schemes.keys()].join(', ')}`);
  }
  for (const key of Object.keys(INTS) as IntKey[]) {
    const v = params.get(key);
    if (v === null) continue;
    const [lo, hi] = INTS[key];
    const x = Number(v);
    if (!/^\d+$/.test(v.trim()) || x < lo || x > hi) problems.push(`${key} must be an integer in [${lo}, ${hi}], got '${v}'`);
    else s[key] = x;
  }
  s.compare = params.get('compare') === '1';
  s.autorun = params.get('autorun') === '1';
  return { settings: s, problems };
}

/** URL parameters for `s` (defaults left out; autorun never written, so a shared link waits for a click). */
export function settingsQuery(s: PageSettings): string {
  const p = new URLSearchParams();
  for (const key of ['model', 'prompt', 'scheme', ...Object.keys(INTS)] as (keyof PageSettings)[]) {
    if (s[key] !== DEFAULT_SETTINGS[key]) p.set(key, String(s[key]));
  }
  if (s.compare) p.set('compare', '1');
  return p.toString();
}

/** The cache policy a page run uses for `scheme` (compare mode calls it with 'f16' too). */
export function pagePolicy(s: Pick<PageSettings, 'window' | 'sinks' | 'anchors'>, scheme: string): CachePolicy {
  return schemePolicy(scheme, {
    window: s.window,
    sinks: s.sinks,
    ...(s.anchors > 0 ? { anchors: { count: s.anchors, layers: 'all', precision: 'f16' } } : {}),
  });
}
