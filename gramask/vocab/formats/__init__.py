"""Readers of one tokenizer format each; every one fills a ``Builder``."""
