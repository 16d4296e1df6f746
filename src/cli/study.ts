// `kvpack study -m MODEL [--text FILE ...] --out DIR`: seed 000's tables and seed 002's anchors study on the
// user's own model and texts, frozen, hashed and audited in one new directory; `--audit DIR` re-checks one.
import type { Command } from 'commander';
import { ArgumentError } from '../errors.js';
import { auditRun } from '../lab/audit.js';
import { Progress } from '../lab/progress.js';
import { runStudy, STUDY_PARTS, type StudyPart } from '../lab/study/study.js';
import { intArg } from './args.js';
import { basename } from 'node:path';
import { readWholeFile } from '../io/files.js';
import { sha256 } from '../lab/hash.js';
import { parseQuestions, type ShortQuestion } from '../lab/study/short-answers.js';
import { studyParts, uninformative } from '../lab/study/study-report.js';

interface StudyOpts {
  model?: string;
  text?: string[];
  out?: string;
  ctx?: number;
  prompts?: number;
  seed: number;
  openings: string;
  parts?: string;
  questions?: string;
  audit?: string;
}

const HELP = `
Your own model: -m takes a .gguf file (any llama-family architecture the engine runs), a llama2.c .bin or a
Hugging Face model directory (config.json + model.safetensors + tokenizer.json). The study names it in the
report by file name, sha256, architecture and shape.

Your own texts: --text FILE (repeatable) makes each file one prompt: BOS + its first (ctx - horizon) tokens;
a shorter file is continued by the model's own greedy f16 text. Without --text, the prompts are the built-in
held-out openings (--openings story: children's stories; --openings doc: CPython-docs-style reStructuredText,
for a documentation model such as pydoc-6.8m) continued by the model's greedy f16 text.

Your own short-answer questions: --questions FILE, a JSON array of {"prompt": "...", "answers": ["..."]}; each
prompt is a completion whose first word is the answer (default: built-in CPython-docs or story questions).

What it runs (each a variant of a built-in protocol, frozen by its hash): live-cache (per-layer attention
error on the live cache, equal-bytes arms, logits per text, loops), window-sweep, needles (as long a
document as the model's context allows), anchors (exact-match at 50/100, layer sets, precisions, prompt
protection vs decode-only anchors), then seed 000's short-answer probe and loops, negative controls that must
fail and a memory table. A table the f16 model itself scores nothing on (needles, short answers) is flagged
UNINFORMATIVE in the report instead of being read as a result.

Examples:
  kvpack study -m ../shared/models/pydoc-6.8m.gguf --openings doc --out study-pydoc
  kvpack study -m Llama-3.2-1B-Q8_0.gguf --text notes.md --text code.py --ctx 1024 --out study-llama
  kvpack study --audit study-pydoc        (or: kvpack protocol audit study-pydoc)
`;

export function register(program: Command): void {
  program
    .command('study')
    .description("seed 000's tables and seed 002's anchors study on your model and texts: one frozen, hashed, audited directory")
    .option('-m, --model <path>', 'model: .gguf, llama2.c .bin or a Hugging Face directory')
    .option('--text <file...>', 'your texts: each file one prompt (default: the built-in openings continued by the model)')
    .option('--out <dir>', 'output directory; must not exist')
    .option(
      '--ctx <n>',
      "positions per sequence (default min(512, the model's trained context)): prompts get ctx - horizon tokens, horizon = min(100, ctx / 2)",
      intArg('--ctx', 32),
    )
    .option('--prompts <n>', 'default prompts: how many (default 8; more narrows the intervals)', intArg('--prompts', 1))
    .option('--seed <n>', 'default prompts: which openings', intArg('--seed', 0), 1)
    .option('--openings <set>', 'default prompts: story | doc', 'story')
    .option('--parts <list>', `comma-separated subset of ${STUDY_PARTS.join(',')} (default all)`)
    .option('--questions <file>', 'short-answer questions: JSON [{"prompt", "answers": [...]}] (default: built-in for --openings)')
    .option('--audit <dir>', 're-audit an existing study directory instead of running one')
    .addHelpText('after', HELP)
    .action((o: StudyOpts) => studyCommand(o));
}

function studyCommand(o: StudyOpts): void {
  if (o.audit) {
    const a = auditRun(o.audit);
    console.log(a.lines().join('\n'));
    if (!a.pass) process.exitCode = 1;
    return;
  }
  if (!o.model) throw new ArgumentError('study: -m MODEL is required (or --audit DIR)');
  if (!o.out) throw new ArgumentError('study: --out DIR is required (a new directory)');
  if (o.openings !== 'story' && o.openings !== 'doc') throw new ArgumentError(`--openings must be story or doc, got ${o.openings}`);
  if (o.text?.length && o.prompts !== undefined) throw new ArgumentError('--prompts counts the built-in openings; with --text every file is one prompt');
  const parts = o.parts
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = parts?.find((p) => !(STUDY_PARTS as readonly string[]).includes(p));
  if (bad) throw new ArgumentError(`--parts: unknown part ${bad} (${STUDY_PARTS.join(', ')})`);
  let questions: { list: ShortQuestion[]; file: string; sha256: string } | undefined;
  if (o.questions) {
    const buf = readWholeFile(o.questions, '--questions file');
    let json: unknown;
    try {
      json = JSON.parse(buf.toString('utf8'));
    } catch (e) {
      throw new ArgumentError(`--questions ${o.questions}: not JSON (${(e as Error).message})`);
    }
    questions = { list: parseQuestions(json, o.questions), file: basename(o.questions), sha256: sha256(buf) };
  }
  const bar = new Progress();
  const t0 = Date.now();
  const r = runStudy({
    model: o.model,
    out: o.out,
    texts: o.text,
    ctx: o.ctx,
    prompts: o.prompts,
    seed: o.seed,
    openings: o.openings,
    parts: parts as StudyPart[] | undefined,
    questions,
    onStart: (n, total) => bar.start(n, total),
    onProgress: (n, done) => bar.update(n, done),
  });
  bar.stop();
  for (const { name, result } of r.runs) console.log(`${name}: controls ${result.pass ? 'PASS' : 'FAIL'}`);
  const u = uninformative(studyParts(r.dir, r.config));
  if (u.length) console.log(`UNINFORMATIVE on this model (the f16 model scores nothing): ${u.join(', ')}`);
  console.log(`wrote ${r.dir}/report.md and report.html in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const a = auditRun(r.dir);
  console.log(`audit: ${a.lines().at(-1)}`);
  for (const c of a.checks.filter((c) => !c.pass)) console.log(`  FAIL ${c.name} (${c.detail})`);
  if (!r.pass || !a.pass) process.exitCode = 1;
}
