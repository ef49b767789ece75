"""Module-path normalization for both nn_module_stack styles, and the per-node fields of the FX map."""

import pytest

from opprof.fx_modules import innermost_module, normalize_module_path, source_location

GPT2_PATHS = [
    "",
    "transformer",
    "transformer.wte",
    "transformer.h",
    "transformer.h.3",
    "transformer.h.3.attn",
    "transformer.h.3.attn.c_attn",
    "transformer.h.3.attn.c_proj",
    "transformer.h.3.ln_1",
    "transformer.h.11.mlp.c_fc",
    "lm_head",
]


@pytest.mark.parametrize(
    "raw, expected",
    [
        # Source-path style (values of nn_module_stack; torch 2.11-2.13 write the dotted-index form).
        ("L['self'].transformer.h[3].attn", "transformer.h.3.attn"),
        ("L['self'].transformer.h.3.attn", "transformer.h.3.attn"),
        ("L['self'].transformer.h.3.attn.c_attn", "transformer.h.3.attn.c_attn"),
        ('L["self"].transformer.h[11].mlp.c_fc', "transformer.h.11.mlp.c_fc"),
        ("L['self']._modules['transformer']._modules['h']._modules['3']", "transformer.h.3"),
        ("getattr(getattr(L['self'].transformer.h, '3'), 'attn')", "transformer.h.3.attn"),
        ("L['fn'].0", "0"),  # torch.compile(nn.Sequential): the root is the compiled callable
        ("G['model'].blocks['a_b']", "blocks.a_b"),  # a global root, a ModuleDict key
        ("self.transformer.h.3.attn", "transformer.h.3.attn"),  # older releases
        ("L['self']", ""),  # the root itself
        ("transformer.h.3", "transformer.h.3"),  # already normalized
    ],
)
def test_source_path_style(raw, expected):
    assert normalize_module_path(raw) == expected
    assert normalize_module_path(raw, GPT2_PATHS) == expected


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("L__self___transformer_h_3_attn", "transformer.h.3.attn"),
        ("L__self___transformer_h_3_attn_c_attn", "transformer.h.3.attn.c_attn"),  # "_" inside a name
        ("L__self___transformer_h_3__attn", "transformer.h.3.attn"),  # mangled from h[3].attn
        ("L__self___transformer_h_11_mlp_c_fc", "transformer.h.11.mlp.c_fc"),
        ("L__self___lm_head", "lm_head"),
        ("L__self__", ""),
    ],
)
def test_mangled_key_style_resolves_against_the_models_paths(raw, expected):
    assert normalize_module_path(raw, GPT2_PATHS) == expected


def test_mangled_style_without_known_paths_is_not_guessed():
    # "c_attn" cannot be told from "c.attn": the flattened rest is returned, visibly not a dotted path.
    assert normalize_module_path("L__self___transformer_h_3_attn_c_attn") == "transformer_h_3_attn_c_attn"
    assert normalize_module_path("L__self___transformer_h_3_attn_c_attn", ["other.path"]) == "transformer_h_3_attn_c_attn"


def test_unknown_spelling_is_kept_verbatim():
    assert normalize_module_path("L['self'].h(3)") == "L['self'].h(3)"


class GPT2Attention:  # stands in for a module class in nn_module_stack values
    pass


def test_innermost_module_new_style_stack():
    # torch 2.13: keys are module ids, values (source path, class), outermost first.
    stack = {
        "140250639597008": ("L['self'].transformer.h.3", "transformers.models.gpt2.modeling_gpt2.GPT2Block"),
        "140250640254672": ("L['self'].transformer.h.3.attn", GPT2Attention),
    }
    assert innermost_module(stack) == ("transformer.h.3.attn", "GPT2Attention")


def test_innermost_module_old_style_stack():
    # Older releases: keys mangled, values source paths (or, in some, the mangled key only).
    stack = {
        "L__self___transformer_h_3": ("L['self'].transformer.h[3]", "<class 'transformers.GPT2Block'>"),
        "L__self___transformer_h_3_attn_c_attn": ("", GPT2Attention),
    }
    assert innermost_module(stack, GPT2_PATHS) == ("transformer.h.3.attn.c_attn", "GPT2Attention")
    stack.popitem()
    assert innermost_module(stack) == ("transformer.h.3", "GPT2Block")


def test_innermost_module_empty():
    assert innermost_module(None) is None
    assert innermost_module({}) is None


def test_source_location_takes_the_last_frame():
    trace = (
        '  File "/work/app/train.py", line 12, in main\n    y = model(x)\n'
        '  File "/usr/lib/python3.12/site-packages/transformers/models/gpt2/modeling_gpt2.py", line 273, in forward\n'
        "    query_states, key_states, value_states = self.c_attn(hidden_states).split(self.split_size, dim=2)\n"
        "                                             ^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
    )
    assert source_location(trace) == "modeling_gpt2.py:273"
    assert source_location("") == ""
    assert source_location(None) == ""
