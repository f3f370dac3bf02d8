//! File server: serves the files of a directory in chunks.
//! `file-server --dir DIR [--endpoints "tcp -h 127.0.0.1 -p 10003"]`
use std::path::{Path, PathBuf};

use floe::bytes::Bytes;
use floe::{Communicator, Current, Identity};
use floe_examples::file_transfer::demo::{ByteSeq, FileAccessException, FileStore, FileStoreServer};

struct FileStoreI {
    communicator: Communicator,
    dir: PathBuf,
}

impl FileStoreI {
    fn path(&self, name: &str) -> floe::Result<PathBuf> {
        let p = Path::new(name);
        if p.components().count() != 1 || name.contains("..") {
            return Err(floe::Error::user(FileAccessException { reason: format!("invalid name {name:?}").into() }));
        }
        Ok(self.dir.join(p))
    }
}

fn access(e: std::io::Error) -> floe::Error {
    floe::Error::user(FileAccessException { reason: e.to_string().into() })
}

impl FileStore for FileStoreI {
    async fn size(&self, name: floe::CompactString, _: &Current) -> floe::Result<i64> {
        Ok(tokio::fs::metadata(self.path(&name)?).await.map_err(access)?.len() as i64)
    }
    async fn read(&self, name: floe::CompactString, offset: i64, num: i32, _: &Current) -> floe::Result<ByteSeq> {
        use tokio::io::{AsyncReadExt, AsyncSeekExt};
        let mut f = tokio::fs::File::open(self.path(&name)?).await.map_err(access)?;
        f.seek(std::io::SeekFrom::Start(offset.max(0) as u64)).await.map_err(access)?;
        let mut buf = vec![0u8; num.clamp(0, 4 << 20) as usize];
        let mut filled = 0;
        while filled < buf.len() {
            let n = f.read(&mut buf[filled..]).await.map_err(access)?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        buf.truncate(filled);
        Ok(Bytes::from(buf))
    }
    async fn shutdown(&self, _: &Current) -> floe::Result<()> {
        self.communicator.shutdown();
        Ok(())
    }
}

fn main() -> floe::Result<()> {
    let (communicator, _) = Communicator::from_args(std::env::args())?;
    let endpoints = floe_examples::arg("--endpoints", "tcp -h 127.0.0.1 -p 10003");
    let dir = PathBuf::from(floe_examples::arg("--dir", "."));
    let adapter = communicator.create_object_adapter_with_endpoints("FileStore", &endpoints)?;
    adapter.add(FileStoreServer::new(FileStoreI { communicator: communicator.clone(), dir }), Identity::new("files"));
    communicator.block_on(adapter.activate())?;
    println!("FileStore ready");
    communicator.block_on(async {
        communicator.wait_for_shutdown().await;
        communicator.destroy().await;
    });
    Ok(())
}
