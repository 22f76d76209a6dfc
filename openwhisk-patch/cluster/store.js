// A CouchDB-API store for cluster.py: pouchdb-server's own parts (express-pouchdb serving an
// in-memory PouchDB), plus the one thing OpenWhisk needs that they lack: OpenWhisk sends the
// revision of an attachment it writes in `If-Match`, as CouchDB accepts, and express-pouchdb
// reads it only from `?rev=`.
//
//   node store.js PORT WORKDIR      (NODE_PATH: the node_modules of pouchdb-server)
'use strict';

const path = require('path');
const express = require('express');
const PouchDB = require('pouchdb-core')
  .plugin(require('pouchdb-adapter-memory'))
  .plugin(require('pouchdb-adapter-http'))
  .plugin(require('pouchdb-replication'))
  .plugin(require('pouchdb-mapreduce'));

const [port, work] = process.argv.slice(2);
const app = express();
app.use((req, res, next) => {
  const match = req.get('If-Match');
  if (match && req.query.rev === undefined) {
    req.query.rev = match.replace(/^"|"$/g, '');
  }
  next();
});
app.use(require('express-pouchdb')(PouchDB.defaults({ adapter: 'memory' }), {
  mode: 'fullCouchDB',
  configPath: path.join(work, 'store-config.json'),
  logPath: path.join(work, 'store-couch.log'),
}));
app.listen(Number(port), '127.0.0.1', () => console.log(`store listening on 127.0.0.1:${port}`));
