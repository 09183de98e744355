//! Pages of what the caller may see, from a list read in chunks: the rule
//! every filtered list follows, whatever the store and the transport.

use std::future::Future;

use crate::error::ApiError;
use crate::ports::StoreError;

/// Most chunks one page reads: where a `forbid` hides nearly everything, a
/// page stops short (with where to go on) rather than read the whole list.
pub const MAX_CHUNKS: usize = 20;

/// One page and, when more may follow, the cursor the next one starts
/// after.
#[derive(Debug)]
pub struct Page<T, C> {
    pub items: Vec<T>,
    pub next: Option<C>,
}

/// A page of what the caller may see: reads chunks of `limit + 1` from
/// `fetch` (each after the last entry read), keeps what `keep` keeps of
/// each, until one more than `limit` is kept (so there is a next page) or
/// the list ends; hidden entries never leave a short page, unless
/// [`MAX_CHUNKS`] were read: then it ends short, its next cursor at the
/// last entry read.
pub async fn visible<T, C, Fetch, Fut, Keep, Kept>(
    limit: u32,
    mut after: Option<C>,
    mut fetch: Fetch,
    mut keep: Keep,
    cursor: impl Fn(&T) -> C,
) -> Result<Page<T, C>, ApiError>
where
    Fetch: FnMut(Option<C>, u32) -> Fut,
    Fut: Future<Output = Result<Vec<T>, StoreError>>,
    Keep: FnMut(Vec<T>) -> Kept,
    Kept: Future<Output = Result<Vec<T>, ApiError>>,
{
    let wanted = limit.saturating_add(1);
    let enough = usize::try_from(wanted).unwrap_or(usize::MAX);
    let mut kept = Vec::new();
    let mut chunks = 0;
    loop {
        chunks += 1;
        let chunk = fetch(after.take(), wanted).await?;
        let read = chunk.len();
        after = chunk.last().map(&cursor);
        kept.extend(keep(chunk).await?);
        if kept.len() >= enough || read < enough {
            break;
        }
        if chunks >= MAX_CHUNKS {
            // Short, and more to read: go on after the last entry read.
            return Ok(Page { items: kept, next: after });
        }
    }
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if kept.len() <= limit {
        return Ok(Page { items: kept, next: None });
    }
    kept.truncate(limit);
    let next = kept.last().map(&cursor);
    Ok(Page { items: kept, next })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numbers 0..len, read `n` at a time after a cursor.
    fn numbers(len: u32) -> impl FnMut(Option<u32>, u32) -> std::future::Ready<Result<Vec<u32>, StoreError>> {
        move |after, n| {
            let start = after.map_or(0, |a| a + 1);
            std::future::ready(Ok((start..len).take(n as usize).collect()))
        }
    }

    fn even(chunk: Vec<u32>) -> std::future::Ready<Result<Vec<u32>, ApiError>> {
        std::future::ready(Ok(chunk.into_iter().filter(|n| n % 2 == 0).collect()))
    }

    #[tokio::test]
    async fn hidden_entries_never_leave_a_short_page_and_the_cursor_is_the_last_shown() {
        let page = visible(3, None, numbers(100), even, |n| *n).await.unwrap();
        assert_eq!((page.items, page.next), (vec![0, 2, 4], Some(4)));
        let rest = visible(3, Some(94), numbers(100), even, |n| *n).await.unwrap();
        assert_eq!((rest.items, rest.next), (vec![96, 98], None));
    }

    #[tokio::test]
    async fn a_page_stops_short_after_max_chunks_at_the_last_entry_read() {
        let none = |_: Vec<u32>| std::future::ready(Ok(Vec::new()));
        let page = visible(1, None, numbers(1000), none, |n| *n).await.unwrap();
        let read = u32::try_from(MAX_CHUNKS * 2).unwrap();
        assert_eq!((page.items, page.next), (vec![], Some(read - 1)));
    }
}
