-- A controller registered without a cloud is in localhost, the cloud a
-- controller names for itself: placement by cloud (add-model --cloud
-- localhost), the controllers listing and the models' Cloud/Region say so.
UPDATE controllers SET cloud = 'localhost' WHERE cloud = '';
