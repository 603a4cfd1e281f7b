import pytest

from services.cleaning.simple_query import is_simple_query


@pytest.mark.parametrize("text", ["hi", "What is Python?", "Is it raining?", "Explain recursion", "Good morning!",
                                  "How are you?", "什么是机器学习？", "机器学习是什么？", "介绍一下你自己", "你好",
                                  "元気ですか？", "東京とは何ですか？", "어떻게 해요?", ""])
def test_reference_simple_examples(text):
    assert is_simple_query(text)


@pytest.mark.parametrize("text", ["Hello there!",
                                  "What is the difference between TCP and UDP in computer networking?",
                                  "Can you write a function that merges two sorted linked lists?",
                                  "Explain recursion with an example in Python and its complexity",
                                  "请解释一下量子纠缠的基本原理和它在量子计算中的应用"])
def test_reference_not_simple_examples(text):
    assert not is_simple_query(text)


def test_korean_polite_simple_questions_are_recognised():
    # The reference's one-character class for polite endings missed these.
    assert is_simple_query("파이썬이란 무엇인가요?")
    assert is_simple_query("머신러닝에 대해 알려주세요")


def test_greetings_alone_are_told_from_questions():
    from services.cleaning.simple_query import is_greeting

    assert all(map(is_greeting, ["Hey", "good evening", "您好！", "おはようございます", "안녕하세요~"]))
    assert not any(map(is_greeting, ["What is a monad?", "hi, what is a monad?", "你好，帮我写一首诗"]))
