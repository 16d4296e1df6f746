// Request schemas (TypeBox): each gives the TS type, fastify's validator and its field-named 400s.
import { Type, type Static } from '@sinclair/typebox';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));

/** Sampling and length fields both completion endpoints take (OpenAI's names plus llama-server's top_k / min_p). */
const Sampling = {
  model: Type.Optional(Type.String()),
  max_tokens: Nullable(Type.Integer({ minimum: 0 })),
  max_completion_tokens: Nullable(Type.Integer({ minimum: 0 })),
  temperature: Nullable(Type.Number({ minimum: 0, maximum: 100 })),
  top_p: Nullable(Type.Number({ minimum: 0, maximum: 1 })),
  top_k: Nullable(Type.Integer({ minimum: 0 })),
  min_p: Nullable(Type.Number({ minimum: 0, maximum: 1 })),
  repeat_penalty: Nullable(Type.Number({ minimum: 0.01, maximum: 100 })),
  seed: Nullable(Type.Integer()),
  n: Nullable(Type.Integer({ minimum: 1, maximum: 1 })),
  stop: Nullable(Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 4 })])),
  stream: Nullable(Type.Boolean()),
  stream_options: Nullable(Type.Object({ include_usage: Type.Optional(Type.Boolean()) })),
  /** Keys the prefix cache: requests with different salts never share KV. */
  cache_salt: Type.Optional(Type.String({ maxLength: 1024 })),
  /** llama-server's slot choice (-1 = any). */
  id_slot: Type.Optional(Type.Integer({ minimum: -1 })),
  ignore_eos: Type.Optional(Type.Boolean()),
};

const TextPart = Type.Object({ type: Type.Literal('text'), text: Type.String() });

export const ChatMessage = Type.Object({
  role: Type.String(),
  content: Type.Union([Type.String(), Type.Array(TextPart), Type.Null()]),
  name: Type.Optional(Type.String()),
});

export const ChatBody = Type.Object({
  messages: Type.Array(ChatMessage, { minItems: 1 }),
  logprobs: Nullable(Type.Boolean()),
  top_logprobs: Nullable(Type.Integer({ minimum: 0, maximum: 20 })),
  ...Sampling,
});
export type ChatBody = Static<typeof ChatBody>;

export const CompletionBody = Type.Object({
  prompt: Type.Union([Type.String(), Type.Array(Type.Integer({ minimum: 0 }), { minItems: 1 }), Type.Array(Type.String(), { minItems: 1, maxItems: 1 })]),
  /** Completions' logprobs: how many top alternatives per token (0 = the chosen token only). */
  logprobs: Nullable(Type.Integer({ minimum: 0, maximum: 5 })),
  ...Sampling,
});
export type CompletionBody = Static<typeof CompletionBody>;

export const TokenizeBody = Type.Object({
  content: Type.String(),
  add_special: Type.Optional(Type.Boolean()),
  with_pieces: Type.Optional(Type.Boolean()),
});
export type TokenizeBody = Static<typeof TokenizeBody>;

export const DetokenizeBody = Type.Object({ tokens: Type.Array(Type.Integer({ minimum: 0 })) });
export type DetokenizeBody = Static<typeof DetokenizeBody>;

export const SlotParams = Type.Object({ id: Type.String({ pattern: '^[0-9]{1,6}$' }) });
export const SlotQuery = Type.Object({ action: Type.Union([Type.Literal('save'), Type.Literal('restore'), Type.Literal('erase')]) });
export const SlotBody = Type.Union([Type.Object({ filename: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })) }), Type.Null()]);
export type SlotBody = Static<typeof SlotBody>;
