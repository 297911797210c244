-- A controller registered without a cloud is in localhost, the cloud a
-- controller names for itself: placement by cloud (add-model --cloud
-- localhost), the controllers listing and the models' Cloud/Region say so.
UPDATE controllers SET cloud = 'localhost' WHERE cloud = '';

-- A disconnection used to record the zero time as a controller's last
-- contact when the hub had not read one yet; none is what it knows.
UPDATE controllers SET last_seen = NULL WHERE last_seen < '0002-01-01';
