-- The example database of `query_a_database.json`: on first start the
-- server builds files/default/shop.db from this file and adds the SQLite
-- connection `shop` to it (read-only, like every SQL connection).
CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price_cents INTEGER NOT NULL, stock INTEGER NOT NULL);
INSERT INTO products (name, price_cents, stock) VALUES
  ('Glass jar', 450, 120),
  ('Box of 12 pencils', 899, 40),
  ('Notebook', 1250, 0),
  ('Desk lamp', 3499, 7);
CREATE TABLE orders (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL REFERENCES products(id), quantity INTEGER NOT NULL, placed_at TEXT NOT NULL);
INSERT INTO orders (product_id, quantity, placed_at) VALUES
  (1, 3, '2026-11-20'), (2, 1, '2026-11-21'), (4, 2, '2026-11-22'), (1, 5, '2026-11-23');
