"""Small helpers every layer may use (standard library only).
"""
