import pytest

from services.cleaning.languages import latin_language, names_language
from services.cleaning.sanity import MessageSanityFilter
from tests.services.cleaning.builders import chat


@pytest.mark.parametrize(("text", "lang"), [
    ("The cache is warm, so the second call returns in a few milliseconds and you can skip the retry.", "en"),
    ("El servidor está lento porque la caché se vacía cada hora y por eso hay que reiniciar el proceso.", "es"),
    ("Le serveur est lent parce que le cache est vidé chaque heure, et il faut donc relancer le processus.", "fr"),
    ("Der Server ist langsam, weil der Cache jede Stunde geleert wird und man den Prozess neu starten muss.", "de"),
    ("O servidor está lento porque o cache é limpo a cada hora e você precisa reiniciar o processo.", "pt"),
    ("Server lambat karena cache dikosongkan setiap jam dan anda harus memulai ulang proses itu dengan cepat.", "id"),
])
def test_function_words_name_the_language(text, lang):
    assert latin_language(text) == lang


def test_short_or_mixed_text_gets_no_call():
    assert latin_language("OK, thanks!") is None
    assert latin_language("Le cache and the server sont slow, y el proceso is stuck con la queue.") is None


_SPANISH = ("Despertarse a las tres de la mañana es muy común y suele estar relacionado con el estrés o el alcohol. "
            "Mantén un horario fijo para acostarte y evita la cafeína por la tarde, porque es la causa más común.")


def test_an_english_question_answered_in_another_latin_language_is_a_mismatch():
    row = chat("I keep waking up at 3am and can't fall back asleep. What can I do about it?", _SPANISH)
    assert MessageSanityFilter().check(row["messages"]) == "lang_match"


def test_an_answer_in_the_language_the_user_named_is_the_answer():
    row = chat("I keep waking up at 3am. Can you answer in Spanish so my mom can read it?", _SPANISH)
    assert isinstance(MessageSanityFilter().check(row["messages"]), list)
    assert names_language("Explain it en español, please", "es") and names_language("translate this", "de")


def test_a_chinese_reply_with_english_words_is_left_to_the_cjk_checks():
    from services.cleaning.sanity import _mostly_latin

    reply = "递归是一种编程技术，函数调用自身来解决问题。例如 the factorial of n is n times the factorial of n minus one。"
    assert not _mostly_latin(reply)
    assert _mostly_latin("The factorial of n is n times the factorial of n minus one, 例如.")


def test_markup_tokens_are_no_words_of_a_language():
    assert latin_language("Canberra is the capital." + "<|im_start|>" * 30) in (None, "en")


def test_a_korean_question_answered_in_spanish_is_a_mismatch():
    row = chat("Kubernetes에서 pod가 계속 재시작될 때 확인 순서 알려줘", _SPANISH)
    assert MessageSanityFilter().check(row["messages"]) == "lang_match"
    row = chat("Kubernetes에서 pod 재시작 원인 확인 순서를 스페인어로 알려줘 (en español)", _SPANISH)
    assert isinstance(MessageSanityFilter().check(row["messages"]), list)
