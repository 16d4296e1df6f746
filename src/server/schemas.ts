// Request schemas (TypeBox): each gives the TS type, fastify's validator and its field-named 400s.
import { Type, type Static } from '@sinclair/typebox';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));

/** Most choices one request may ask for (n), and most prompts in one batch. */
export const MAX_N = 16;

/**
 * Sampling and length fields both completion endpoints take (OpenAI's names plus llama-server's top_k /
 * min_p / repeat_penalty). Every accepted field is read (README's Serve section lists them); fields OpenAI
 * defines that kvpack does not implement are refused by name (unsupported.ts), and any other unknown field
 * is a 400 too (additionalProperties: false).
 */
const Sampling = {
  /** Any name: the one loaded model answers (as llama-server). */
  model: Type.Optional(Type.String()),
  max_tokens: Nullable(Type.Integer({ minimum: 0 })),
  max_completion_tokens: Nullable(Type.Integer({ minimum: 0 })),
  temperature: Nullable(Type.Number({ minimum: 0, maximum: 100 })),
  top_p: Nullable(Type.Number({ minimum: 0, maximum: 1 })),
  top_k: Nullable(Type.Integer({ minimum: 0 })),
  min_p: Nullable(Type.Number({ minimum: 0, maximum: 1 })),
  repeat_penalty: Nullable(Type.Number({ minimum: 0.01, maximum: 100 })),
  presence_penalty: Nullable(Type.Number({ minimum: -2, maximum: 2 })),
  frequency_penalty: Nullable(Type.Number({ minimum: -2, maximum: 2 })),
  /** Token id (as a decimal string) -> bias in [-100, 100]. */
  logit_bias: Nullable(Type.Record(Type.String({ pattern: '^[0-9]{1,9}$' }), Type.Number({ minimum: -100, maximum: 100 }), { additionalProperties: false })),
  seed: Nullable(Type.Integer()),
  /** Choices per prompt: parallel sequences forked from one prefill. */
  n: Nullable(Type.Integer({ minimum: 1, maximum: MAX_N })),
  stop: Nullable(Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 4 })])),
  stream: Nullable(Type.Boolean()),
  stream_options: Nullable(Type.Object({ include_usage: Type.Optional(Nullable(Type.Boolean())) }, { additionalProperties: false })),
  /** OpenAI's end-user id: kept in no log and changes no output (it is for the provider's abuse monitoring). */
  user: Type.Optional(Type.String()),
  /** Keys the prefix cache: requests with different salts never share KV. */
  cache_salt: Type.Optional(Type.String({ maxLength: 1024 })),
  /** llama-server's slot choice (-1 = any). */
  id_slot: Type.Optional(Type.Integer({ minimum: -1 })),
  ignore_eos: Type.Optional(Type.Boolean()),
  /** Refused by name when set (unsupported.ts); declared so the 400 says why rather than "unknown field". */
  tools: Type.Optional(Type.Unknown()),
  tool_choice: Type.Optional(Type.Unknown()),
  functions: Type.Optional(Type.Unknown()),
  function_call: Type.Optional(Type.Unknown()),
  response_format: Type.Optional(Type.Unknown()),
  best_of: Type.Optional(Type.Unknown()),
  suffix: Type.Optional(Type.Unknown()),
  parallel_tool_calls: Type.Optional(Type.Unknown()),
};

const TextPart = Type.Object({ type: Type.Literal('text'), text: Type.String() }, { additionalProperties: false });

export const ChatMessage = Type.Object(
  {
    role: Type.Union([Type.Literal('system'), Type.Literal('developer'), Type.Literal('user'), Type.Literal('assistant')]),
    content: Type.Union([Type.String(), Type.Array(TextPart)]),
  },
  { additionalProperties: false },
);

export const ChatBody = Type.Object(
  {
    messages: Type.Array(ChatMessage, { minItems: 1 }),
    logprobs: Nullable(Type.Boolean()),
    top_logprobs: Nullable(Type.Integer({ minimum: 0, maximum: 20 })),
    ...Sampling,
  },
  { additionalProperties: false },
);
export type ChatBody = Static<typeof ChatBody>;

const TokenIds = Type.Array(Type.Integer({ minimum: 0 }), { minItems: 1 });

export const CompletionBody = Type.Object(
  {
    /** One prompt (text or token ids) or a batch of them (one choice each, times n). */
    prompt: Type.Union([
      Type.String(),
      TokenIds,
      Type.Array(Type.String(), { minItems: 1, maxItems: MAX_N }),
      Type.Array(TokenIds, { minItems: 1, maxItems: MAX_N }),
    ]),
    /** Completions' logprobs: how many top alternatives per token (0 = the chosen token only). */
    logprobs: Nullable(Type.Integer({ minimum: 0, maximum: 5 })),
    /** The prompt comes back before the completion, with its own tokens' logprobs when logprobs is set. */
    echo: Nullable(Type.Boolean()),
    ...Sampling,
  },
  { additionalProperties: false },
);
export type CompletionBody = Static<typeof CompletionBody>;

export const TokenizeBody = Type.Object(
  {
    content: Type.String(),
    add_special: Type.Optional(Type.Boolean()),
    with_pieces: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type TokenizeBody = Static<typeof TokenizeBody>;

export const DetokenizeBody = Type.Object({ tokens: Type.Array(Type.Integer({ minimum: 0 })) }, { additionalProperties: false });
export type DetokenizeBody = Static<typeof DetokenizeBody>;

export const SlotParams = Type.Object({ id: Type.String({ pattern: '^[0-9]{1,6}$' }) });
export const SlotQuery = Type.Object({ action: Type.Union([Type.Literal('save'), Type.Literal('restore'), Type.Literal('erase')]) });
export const SlotBody = Type.Union([Type.Object({ filename: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })) }), Type.Null()]);
export type SlotBody = Static<typeof SlotBody>;
