//! `ApiError`: every failure of the HTTP API as a response with a status,
//! a stable code from [`ErrorCode`] and a `{"detail": ...}` body, the shape
//! the `langgraph-sdk` clients read their messages from.

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use deepfleet_proto::api::ErrorResponse;
use deepfleet_proto::{ErrorCode, LimitExceeded};
use deepfleet_store::StoreError;
use serde::de::DeserializeOwned;
use tracing::error;

use deepfleet_scheduler::SchedulerError;
use deepfleet_scheduler::runs::RunsError;

/// An API failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable code, also sent as the body's `code`.
    pub code: ErrorCode,
    /// What the caller reads; never internal details.
    pub detail: String,
    /// Seconds the caller should wait before trying again, sent as
    /// `Retry-After`.
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// 404.
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, ErrorCode::NotFound, detail)
    }

    /// 409.
    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, ErrorCode::Conflict, detail)
    }

    /// 400.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidRequest, detail)
    }

    /// 422: well-formed JSON that breaks the contract.
    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            ErrorCode::InvalidRequest,
            detail,
        )
    }

    /// 413: a body, message or file over its limit, or a thread over its
    /// number of files.
    pub fn too_large(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::TooLarge, detail)
    }

    /// 406: the client does not accept what the route answers.
    pub fn not_acceptable(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::NOT_ACCEPTABLE,
            ErrorCode::InvalidRequest,
            detail,
        )
    }

    /// 415: a body of a media type the route does not read.
    pub fn unsupported_media_type(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ErrorCode::InvalidRequest,
            detail,
        )
    }

    /// A client error of `status` that another layer decided (the MCP
    /// transport's refusals), with a `detail` like every other.
    pub fn client(status: StatusCode, detail: impl Into<String>) -> Self {
        match status {
            StatusCode::PAYLOAD_TOO_LARGE => Self::too_large(detail),
            status => Self::new(status, ErrorCode::InvalidRequest, detail),
        }
    }

    /// 401: no key, or one the API does not know.
    pub fn unauthenticated() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            ErrorCode::Unauthenticated,
            "A valid API key is required (x-api-key or Authorization: Bearer).",
        )
    }

    /// 403: the key's role may not do this.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, detail)
    }

    /// 429: the caller's tenant has too many runs in flight; try again
    /// after `retry_after` seconds.
    pub fn too_many_runs(detail: impl Into<String>, retry_after: u64) -> Self {
        ApiError {
            retry_after: Some(retry_after),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::TooManyRuns,
                detail,
            )
        }
    }

    /// This error of the part `what` of a larger request (`runs[3]` of a
    /// batch): the detail says which part.
    pub fn within(mut self, what: &str) -> Self {
        self.detail = format!("{what}: {}", self.detail);
        self
    }

    fn new(status: StatusCode, code: ErrorCode, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            detail: detail.into(),
            retry_after: None,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorResponse {
            detail: self.detail,
            code: self.code,
        };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        // The store refused what the caller asked: the caller's mistake.
        if let StoreError::Invalid(reason) = e {
            return ApiError::unprocessable(reason);
        }
        error!(error = %e, "store failure behind an API request");
        let status = if e.is_retryable() {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        ApiError::new(
            status,
            ErrorCode::Internal,
            "The store failed; see the server logs.",
        )
    }
}

impl From<LimitExceeded> for ApiError {
    fn from(e: LimitExceeded) -> Self {
        ApiError::too_large(e.to_string())
    }
}

impl From<SchedulerError> for ApiError {
    fn from(e: SchedulerError) -> Self {
        RunsError::from(e).into()
    }
}

impl From<RunsError> for ApiError {
    fn from(e: RunsError) -> Self {
        match e {
            RunsError::Malformed(detail) => ApiError::bad_request(detail),
            RunsError::Invalid(detail) => ApiError::unprocessable(detail),
            RunsError::InvalidSpec(detail) => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ErrorCode::InvalidSpec,
                detail,
            ),
            RunsError::TooLarge(limit) => limit.into(),
            RunsError::NotFound(detail) => ApiError::not_found(detail),
            RunsError::Conflict(detail) => ApiError::conflict(detail),
            RunsError::TooManyRuns {
                detail,
                retry_after,
            } => ApiError::too_many_runs(detail, retry_after),
            RunsError::Store(e) => e.into(),
            RunsError::Queue(e) => {
                error!(error = %e, "queue failure behind an API request");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::Internal,
                    "The queue failed; see the server logs.",
                )
            }
        }
    }
}

/// A JSON body whose rejections are [`ApiError`]s: bad syntax is 400,
/// a body of the wrong shape 422, as the reference server answers.
pub struct Body<T>(pub T);

impl<S, T> FromRequest<S> for Body<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(value)) => Ok(Body(value)),
            Err(rejection) => Err(rejection_error(&rejection)),
        }
    }
}

/// The answer to a path no route has: a 404 with a `detail`, like every
/// other refusal (axum's own has no body).
pub async fn no_route() -> ApiError {
    ApiError::not_found("No such route; see /openapi.json for the API's routes.")
}

/// The answer to a method a route does not have: a 405 with a `detail`
/// (axum keeps the `Allow` header).
pub async fn no_method() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::InvalidRequest,
        "This route does not take this method; see /openapi.json.",
    )
}

/// A query string whose rejection is an [`ApiError`]: a value of the
/// wrong type or a missing field is 422 with a `detail`, like a body's.
pub struct QueryString<T>(pub T);

impl<S, T> FromRequestParts<S> for QueryString<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(QueryString(value)),
            Err(rejection) => Err(ApiError::unprocessable(rejection.body_text())),
        }
    }
}

/// The values a query string gives `key`, as the SDKs send a list:
/// repeated (`key=a&key=b`, or `key[]=...`) or comma-separated, empty
/// values dropped.
pub fn query_list(query: Option<&str>, key: &str) -> Vec<String> {
    let bracketed = format!("{key}[]");
    url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .filter(|(name, _)| *name == key || *name == bracketed)
        .flat_map(|(_, value)| {
            value
                .split(',')
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
                .collect::<Vec<_>>()
        })
        .collect()
}

fn rejection_error(rejection: &JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonDataError(e) => ApiError::unprocessable(e.body_text()),
        JsonRejection::JsonSyntaxError(e) => ApiError::bad_request(e.body_text()),
        JsonRejection::MissingJsonContentType(e) => ApiError::unsupported_media_type(e.body_text()),
        other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::too_large(other.body_text())
        }
        other => ApiError::bad_request(other.body_text()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn errors_answer_with_detail_and_code() {
        let response = ApiError::conflict("Thread is busy.").into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        let bytes = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            body,
            json!({"detail": "Thread is busy.", "code": "conflict"})
        );
    }

    #[test]
    fn scheduler_errors_map_to_statuses() {
        let e: ApiError = SchedulerError::UnknownAgent("x".into()).into();
        assert_eq!(
            (e.status, e.code),
            (StatusCode::NOT_FOUND, ErrorCode::NotFound)
        );
        let e: ApiError = StoreError::Corrupt {
            key: "secret-key".into(),
            reason: "r".into(),
        }
        .into();
        assert_eq!(e.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            !e.detail.contains("secret"),
            "no internals in the body: {}",
            e.detail
        );
        let e: ApiError = StoreError::Invalid("label 1 is empty".into()).into();
        assert_eq!(
            (e.status, e.detail.as_str()),
            (StatusCode::UNPROCESSABLE_ENTITY, "label 1 is empty")
        );
    }
}
