"""Integration suites, one package per framework (sentry-python's layout).

This file makes ``tests/integrations`` a package so that the framework packages below it are
imported as ``integrations.<framework>``, never as a top-level ``langchain`` or ``crewai`` that
would shadow the real framework.
"""
