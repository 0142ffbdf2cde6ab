"""Chat templates as transformers applies them, and the tokens of a conversation with their
loss mask (prepare_sft.py).

A model directory's chat template is its chat_template.jinja, else the "chat_template" of its
tokenizer_config.json (a string, or a list of {"name", "template"} of which "default" is
taken). It is rendered with transformers' tokenizer.apply_chat_template(tokenize=False) when
transformers is importable and loads the directory's tokenizer; otherwise with jinja2 in the
environment transformers builds (a sandbox with trim_blocks, lstrip_blocks and loop controls;
tojson without HTML escaping; raise_exception; strftime_now; the {% generation %} tag), with
the special tokens of tokenizer_config.json (bos_token, eos_token, ...) as variables.

Loss on assistant turns only: the whole conversation is rendered once (W); for each assistant
turn i, the conversation before it is rendered with add_generation_prompt=True (P_i), which must
be a prefix of W: the turn starts where P_i ends. When the render of the conversation up to and
including turn i (Q_i) is a prefix of W (most templates), the turn ends where Q_i ends.
Otherwise (a template that renders the last turn differently, or closes a conversation with an
end token only when it ends) the turn's content is found in W after P_i, and the end marker
after it is the longest run of tokens that follows the content both in W and in Q_i (compared
token by token, so that a special-token marker is taken whole). The turn's span of W (its
content and end marker, plus whatever the template puts between the generation prompt and the
content) is trained, the rest is not; a template whose P_i is not a prefix of W, or that
changes the content, is refused. Each piece is tokenized on its own (add_special_tokens off)
and the pieces are concatenated.

Built-in templates (no model directory), the text around a turn:
  plain   user "User: {content}\\n", assistant prompt "Assistant: ", assistant "{content}\\n"
          (a single-turn pair renders as "User: {prompt}\\nAssistant: {response}")
  chatml  "<|im_start|>{role}\\n{content}<|im_end|>\\n", assistant prompt
          "<|im_start|>assistant\\n" (Qwen's format)
"""
import json
import os
from datetime import datetime


class TemplateError(ValueError):
    """A missing or unusable chat template, or a conversation it cannot render."""


def _special_tokens(config):
    out = {}
    for key, value in config.items():
        if key.endswith("_token") and isinstance(value, str):
            out[key] = value
        elif key.endswith("_token") and isinstance(value, dict) and isinstance(
                value.get("content"), str):
            out[key] = value["content"]
    return out


def load_model_template(model_dir):
    """(template source, where it came from, special tokens) of `model_dir`.
    Raises TemplateError naming the directory when it has no chat template."""
    config_path = os.path.join(model_dir, "tokenizer_config.json")
    config = {}
    if os.path.isfile(config_path):
        try:
            with open(config_path, encoding="utf-8") as f:
                config = json.load(f)
        except (OSError, ValueError) as e:
            raise TemplateError(f"cannot read {config_path}: {e}")
        if not isinstance(config, dict):
            raise TemplateError(f"{config_path} is not a JSON object")
    jinja_path = os.path.join(model_dir, "chat_template.jinja")
    if os.path.isfile(jinja_path):
        with open(jinja_path, encoding="utf-8") as f:
            return f.read(), jinja_path, _special_tokens(config)
    template = config.get("chat_template")
    if isinstance(template, list):
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    if not isinstance(template, str) or not template:
        raise TemplateError(f"{model_dir} has no chat template (no chat_template.jinja and no "
                            "'chat_template' in tokenizer_config.json); pass --template plain "
                            "or chatml for a built-in one")
    return template, config_path, _special_tokens(config)


def _jinja_environment():
    import jinja2
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(Extension):
        """transformers' {% generation %} ... {% endgeneration %}: renders its body."""
        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(
                lineno)

        def _body(self, caller):
            return caller()

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[Generation, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env


class JinjaRenderer:
    """Renders a chat template with jinja2 as transformers does (module comment)."""

    def __init__(self, source, special_tokens):
        try:
            import jinja2
        except ImportError:
            raise TemplateError("a model's chat template needs the `jinja2` package "
                                "(pip install jinja2) or transformers")
        try:
            self._template = _jinja_environment().from_string(source)
        except jinja2.exceptions.TemplateError as e:
            raise TemplateError(f"the chat template does not compile: {e}")
        self._special = special_tokens
        self.name = f"jinja2 {jinja2.__version__}"

    def render(self, messages, add_generation_prompt):
        import jinja2
        try:
            return self._template.render(messages=messages,
                                         add_generation_prompt=add_generation_prompt,
                                         **self._special)
        except jinja2.exceptions.TemplateError as e:
            raise TemplateError(f"the chat template refused the conversation: {e}")


class TransformersRenderer:
    """Renders with a transformers tokenizer's apply_chat_template."""

    def __init__(self, tokenizer, source):
        import transformers
        self._tok = tokenizer
        self._source = source
        self.name = f"transformers {transformers.__version__}"

    def render(self, messages, add_generation_prompt):
        try:
            return self._tok.apply_chat_template(messages, chat_template=self._source,
                                                 tokenize=False,
                                                 add_generation_prompt=add_generation_prompt)
        except Exception as e:  # jinja2's TemplateError, or transformers' ValueError
            raise TemplateError(f"the chat template refused the conversation: {e}")


def model_renderer(model_dir):
    """The renderer of `model_dir`'s chat template and where the template came from."""
    source, where, special = load_model_template(model_dir)
    try:
        import transformers
        tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir)
        return TransformersRenderer(tokenizer, source), where
    except Exception:  # no transformers, or no tokenizer it can load: jinja2 directly
        return JinjaRenderer(source, special), where


class BuiltinRenderer:
    """The built-in templates of the module comment."""

    TURNS = {
        "plain": ({"system": "System: {}\n", "user": "User: {}\n", "tool": "Tool: {}\n",
                   "assistant": "{}\n"}, "Assistant: "),
        "chatml": ({r: "<|im_start|>" + r + "\n{}<|im_end|>\n"
                    for r in ("system", "user", "tool")}
                   | {"assistant": "{}<|im_end|>\n"}, "<|im_start|>assistant\n"),
    }

    def __init__(self, name):
        self.name = f"built-in {name}"
        self._turns, self._prompt = self.TURNS[name]
        self._plain = name == "plain"

    def render(self, messages, add_generation_prompt):
        text = ""
        for k, m in enumerate(messages):
            if m["role"] == "assistant":
                text += self._prompt
                body = self._turns["assistant"].format(m["content"])
                # plain: no newline after the last turn (rpc's earlier prompt/response layout)
                text += body[:-1] if self._plain and k == len(messages) - 1 else body
            else:
                text += self._turns[m["role"]].format(m["content"])
        return text + (self._prompt if add_generation_prompt else "")


def _turn_end(whole, turn, start, content):
    """(end, marker) of the assistant turn that starts at `start` of `whole` (module comment):
    where its span of `whole` ends, and None when `turn` (the render that ends with it) is a
    prefix of `whole`; else where its content ends and the text after the content in `turn`,
    to be compared token by token with what follows in `whole`."""
    if whole.startswith(turn) and len(turn) >= start:
        return len(turn), None
    at, tail = whole.find(content, start), turn.rfind(content)
    if at < 0 or tail < 0:
        raise TemplateError("the chat template changes an assistant turn's content, so its "
                            "tokens cannot be told apart")
    return at + len(content), turn[tail + len(content):]


def assistant_spans(conversation, renderer):
    """(the rendered conversation, per assistant turn (start, end, marker) of _turn_end)."""
    whole = renderer.render(conversation, add_generation_prompt=False)
    spans, done = [], 0
    for i, message in enumerate(conversation):
        if message["role"] != "assistant":
            continue
        prompt = renderer.render(conversation[:i], add_generation_prompt=True)
        if not whole.startswith(prompt) or len(prompt) < done:
            raise TemplateError(f"the chat template renders the conversation before assistant "
                                f"turn {i} (with its generation prompt) differently from the "
                                "whole conversation, so the turn's tokens cannot be told apart")
        turn = renderer.render(conversation[:i + 1], add_generation_prompt=False)
        end, marker = _turn_end(whole, turn, len(prompt), message["content"])
        spans.append((len(prompt), end, marker))
        done = end
    return whole, spans


def encode_conversation(conversation, renderer, tokenizer, eos_id=None):
    """(tokens, mask) of one conversation: mask 1 on the tokens of assistant turns (module
    comment); `eos_id`, when given, is appended after the conversation and trained.
    Raises TemplateError when the template cannot be split at the assistant turns."""
    whole, spans = assistant_spans(conversation, renderer)
    tokens, mask = [], []

    def add(text, trained):
        ids = tokenizer.encode(text) if text else []
        tokens.extend(ids)
        mask.extend([trained] * len(ids))
        return ids

    done, marker = 0, None
    for start, end, next_marker in spans + [(len(whole), len(whole), None)]:
        ids = add(whole[done:start], 0)
        if marker:  # the end marker of the previous turn: the tokens it shares with this text
            theirs = tokenizer.encode(marker)
            n = 0
            while n < min(len(ids), len(theirs)) and ids[n] == theirs[n]:
                n += 1
            mask[len(mask) - len(ids):len(mask) - len(ids) + n] = [1] * n
        add(whole[start:end], 1)
        done, marker = end, next_marker
    if eos_id is not None:
        tokens.append(eos_id)
        mask.append(1)
    return tokens, mask
