// Chat rendering: a real-style template, the ChatML fallback (and that it says so), template errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ArgumentError } from '../errors.js';
import { ChatTemplateError, renderChat } from './chat.js';
import { trainedBpeMetadata } from '../../test/fixtures/tokenizer.js';
import { createTokenizer } from './tokenizer/tokenizer.js';

const MESSAGES = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Hi there' },
];

// The shape of Llama 3's template: bos on the first message, trimmed content, header tokens.
const LLAMA3 =
  "{% for message in messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' %}" +
  '{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}' +
  "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";

test("the model's template is rendered with bos_token and the generation prompt", () => {
  const r = renderChat(LLAMA3, MESSAGES, { bosToken: '<|begin_of_text|>' });
  assert.equal(r.source, 'model');
  assert.equal(r.notice, undefined);
  assert.equal(
    r.text,
    '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>' +
      '<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
  );
  const noPrompt = renderChat(LLAMA3, MESSAGES, { addGenerationPrompt: false }).text;
  assert.ok(noPrompt.endsWith('Hi there<|eot_id|>'));
});

test('no template in the file: ChatML fallback, flagged with a notice', () => {
  for (const template of [undefined, '', '  ']) {
    const r = renderChat(template, MESSAGES);
    assert.equal(r.source, 'fallback');
    assert.match(r.notice!, /no chat template/);
    assert.equal(r.text, '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n');
  }
});

test('the rendered ChatML prompt tokenizes into control tokens with parseSpecial', () => {
  const tk = createTokenizer(trainedBpeMetadata({ pre: 'qwen2' }));
  const ids = tk.encode(renderChat(undefined, MESSAGES).text, { parseSpecial: true });
  const start = tk.vocab.id('<|im_start|>');
  assert.equal(ids.filter((i) => i === start).length, 3);
  assert.equal(ids.filter((i) => i === tk.vocab.eot).length, 2);
});

test('template failures are ChatTemplateError with the reason; bad messages an ArgumentError', () => {
  assert.throws(
    () => renderChat('{% if %}', MESSAGES),
    (e: unknown) => e instanceof ChatTemplateError && /does not parse/.test(String(e)),
  );
  assert.throws(
    () => renderChat("{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}", MESSAGES),
    (e: unknown) => e instanceof ChatTemplateError && /System role not supported/.test(String(e)),
  );
  assert.throws(() => renderChat(LLAMA3, [{ role: 'user', content: 3 as unknown as string }]), ArgumentError);
});

test('extra variables reach the template', () => {
  const r = renderChat('{{ greeting }} {{ messages | length }}', MESSAGES, { variables: { greeting: 'hey' } });
  assert.equal(r.text, 'hey 2');
});
