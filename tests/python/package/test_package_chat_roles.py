"""LLM.chat checks message roles as the server's chat requests do (chat/message_roles.h): an
unknown role is a LumenError naming it, not a prompt the template renders under a made-up role."""
import pytest

import lumen
from conftest import greedy


def test_an_unknown_role_is_named(llm):
    conversation = [{"role": "system", "content": "Be brief."}, {"role": "wizard", "content": "Hi"}]
    with pytest.raises(lumen.LumenError, match="message 1 has the unknown role 'wizard'"):
        llm.chat(conversation, greedy(1))


def test_a_missing_role_is_said(llm):
    with pytest.raises(lumen.LumenError, match="message 0 has no 'role'"):
        llm.chat([{"content": "Hi"}], greedy(1))


def test_openais_roles_are_accepted(llm):
    conversation = [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Bye"}]
    [out] = llm.chat(conversation, greedy(2))
    assert out.outputs[0].token_ids
