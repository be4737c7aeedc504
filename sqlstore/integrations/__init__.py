"""Framework integrations, each behind its extra (``pip install 'sqlstore[<extra>]'``).

Each module translates one framework's storage contract onto sqlstore's ports
and imports its framework only inside itself; ``import sqlstore`` never does.
"""
