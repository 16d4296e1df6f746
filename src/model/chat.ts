// Chat prompts from the model's own Jinja template (`tokenizer.chat_template`), rendered with
// @huggingface/jinja; a ChatML fallback when the file carries no template, reported as such.
import { Template } from '@huggingface/jinja';
import { ArgumentError, KvpackError } from '../errors.js';
import type { Tokenizer } from './tokenizer/index.js';

/** A template that does not parse or fails while rendering; the message carries Jinja's reason. */
export class ChatTemplateError extends KvpackError {
  constructor(message: string) {
    super('BAD_CHAT_TEMPLATE', message);
  }
}

export interface ChatMessage {
  role: string;
  content: string;
}

export interface ChatRenderOptions {
  /** End with the assistant header so the model writes the reply. Default true. */
  addGenerationPrompt?: boolean;
  bosToken?: string;
  eosToken?: string;
  /** Further template variables (tools, date strings, enable_thinking...). */
  variables?: Record<string, unknown>;
}

export interface RenderedChat {
  text: string;
  /** 'model' when the GGUF's template was used; 'fallback' for the built-in ChatML one. */
  source: 'model' | 'fallback';
  /** Set when the fallback was used: say so to the user, the model may not know ChatML. */
  notice?: string;
}

/** ChatML (<|im_start|>role ... <|im_end|>), the common convention of Qwen and SmolLM. */
export const FALLBACK_CHAT_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const FALLBACK_NOTICE = 'the model file has no chat template (tokenizer.chat_template); using a ChatML fallback';

// Parsing a 10 KB template costs milliseconds; chat loops render it every turn.
const parsed = new Map<string, Template>();

function compile(template: string): Template {
  let t = parsed.get(template);
  if (!t) {
    try {
      t = new Template(template);
    } catch (e) {
      throw new ChatTemplateError(`chat template does not parse: ${(e as Error).message}`);
    }
    parsed.set(template, t);
  }
  return t;
}

/**
 * Renders `messages` with `template`; pass undefined/'' (no template in the file) to use the ChatML
 * fallback. The result is meant to be tokenized with special-token parsing on.
 */
export function renderChat(template: string | undefined, messages: readonly ChatMessage[], opts: ChatRenderOptions = {}): RenderedChat {
  messages.forEach((m, i) => {
    if (typeof m?.role !== 'string' || typeof m?.content !== 'string') {
      throw new ArgumentError(`chat message ${i} needs string 'role' and 'content'`);
    }
  });
  const fallback = template === undefined || template.trim() === '';
  const compiled = compile(fallback ? FALLBACK_CHAT_TEMPLATE : template);
  let text: string;
  try {
    text = compiled.render({
      ...opts.variables,
      messages: messages.map((m) => ({ ...m })),
      add_generation_prompt: opts.addGenerationPrompt ?? true,
      bos_token: opts.bosToken ?? '',
      eos_token: opts.eosToken ?? '',
    });
  } catch (e) {
    throw new ChatTemplateError(`chat template failed to render: ${(e as Error).message}`);
  }
  return fallback ? { text, source: 'fallback', notice: FALLBACK_NOTICE } : { text, source: 'model' };
}

/** Messages as prompt tokens through the tokenizer's template, ending with the assistant header (one BOS at most). */
export function chatPromptTokens(tokenizer: Tokenizer, messages: readonly ChatMessage[]): number[] {
  return withOneBos(tokenizer, tokenizer.encode(renderChatForTokens(tokenizer, messages), { addSpecial: false, parseSpecial: true }));
}

/** The rendered conversation chatPromptTokens tokenizes (special tokens parsed, no BOS/EOS added). */
export function renderChatForTokens(tokenizer: Tokenizer, messages: readonly ChatMessage[]): string {
  const v = tokenizer.vocab;
  const special = (id: number) => (id >= 0 && id < v.tokens.length ? v.tokens[id] : undefined);
  return renderChat(tokenizer.chatTemplate, messages, { bosToken: special(v.bos), eosToken: special(v.eos) }).text;
}

/** Templates that write bos_token themselves must not get a second BOS. */
export function withOneBos(tokenizer: Tokenizer, ids: number[]): number[] {
  const v = tokenizer.vocab;
  return v.addBos && ids[0] !== v.bos ? [v.bos, ...ids] : ids;
}
